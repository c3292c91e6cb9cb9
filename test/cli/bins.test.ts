/**
 * Every bin as npm installs it (the built dist/, a separate process):
 * `--version` and `--help` answer and exit 0, and the local platform on a port
 * already taken says so in one line, naming the port and the flag, exit 1.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../helpers/run.js';

const root = resolve(import.meta.dirname, '..', '..');
const kitVersion = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
const createVersion = JSON.parse(
  readFileSync(join(root, 'create-app', 'package.json'), 'utf8'),
).version;
const bins = {
  'store-app': join(root, 'dist', 'cli', 'index.js'),
  'store-platform': join(root, 'dist', 'platform', 'cli.js'),
  'create-store-app': join(root, 'create-app', 'dist', 'index.js'),
};

beforeAll(async () => {
  const r = await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'create-app/tsconfig.json'],
    { cwd: root },
  );
  expect(r.status, r.stdout).toBe(0);
});

function bin(name: keyof typeof bins, args: string[]) {
  return run(process.execPath, [bins[name], ...args], { cwd: root, timeout: 20_000 });
}

describe('--version and --help on every bin', () => {
  for (const name of Object.keys(bins) as Array<keyof typeof bins>) {
    const version = name === 'create-store-app' ? createVersion : kitVersion;
    it(`${name} --version prints ${version}`, async () => {
      for (const flag of ['--version', '-v']) {
        const r = await bin(name, [flag]);
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout.trim()).toBe(version);
      }
    });
    it(`${name} --help prints usage and exits 0`, async () => {
      const r = await bin(name, ['--help']);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(`Usage: ${name}`);
      expect(r.stdout).toContain('--version');
    });
  }
});

describe('port in use', () => {
  let busy: Server;
  let port: number;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    port = (busy.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => busy.close(() => r())));

  it('store-platform on a taken port prints one line naming the port and --port, exit 1', async () => {
    const r = await bin('store-platform', ['--port', String(port)]);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`port ${port}`);
    expect(lines[0]).toContain('--port');
    expect(r.stderr).not.toContain('EADDRINUSE');
  });
});
