/**
 * The real `create-store-app` bin as npm runs it: a separate node process,
 * stdin not a terminal (so it must not prompt), finished in under 3 s
 * without the install.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'create-app', 'dist', 'index.js');
let work: string;

beforeAll(() => {
  const r = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'create-app/tsconfig.json'],
    { cwd: root, encoding: 'utf8' },
  );
  expect(r.status, r.stdout).toBe(0);
  work = mkdtempSync(join(tmpdir(), 'create-store-app-bin-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

it('scaffolds without prompting when stdin is not a terminal', () => {
  const r = spawnSync(process.execPath, [bin, 'piped-app', '--no-install'], {
    cwd: work,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
    input: '',
    timeout: 10_000,
    env: { ...process.env, npm_config_user_agent: 'npm/10.8.2 node/v20' },
  });
  expect(r.status, r.stderr).toBe(0);
  expect(readFileSync(join(bin), 'utf8').startsWith('#!/usr/bin/env node')).toBe(true);
  expect(existsSync(join(work, 'piped-app', '.git'))).toBe(true);
  expect(r.stdout).toContain('npm run dev');
});
