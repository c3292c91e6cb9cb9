/**
 * Issue 6 item 5: what a newcomer gets really works. Pack the kit as npm would
 * publish it, scaffold with the real `create-store-app` bin (no terminal, so
 * no prompts), install from the registry, and run the generated app's own
 * test suite against the local platform. Slow by nature (an npm install); it
 * never skips, in CI or out.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { run } from '../helpers/run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
let work: string;

// The generated app must not inherit this repository's test settings.
const childEnv = {
  ...process.env,
  NODE_ENV: '',
  VITEST: '',
  VITEST_POOL_ID: '',
  VITEST_WORKER_ID: '',
};
const sh = (cmd: string, args: string[], cwd: string) => run(cmd, args, { cwd, env: childEnv });

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'generated-project-'));
  if (!existsSync(join(root, 'dist', 'index.js')))
    await sh(process.execPath, [tsc, '-p', 'tsconfig.build.json'], root);
  const built = await sh(process.execPath, [tsc, '-p', 'create-app/tsconfig.json'], root);
  expect(built.status, built.out).toBe(0);
});

// Removing two installed projects takes more than the default 30 s on a loaded machine.
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, 180_000);

let tgz: string | undefined;
/** The kit packed once for every template's run. */
async function packedKit(): Promise<string> {
  if (tgz) return tgz;
  // --ignore-scripts: `npm test` built dist/ already; prepack's rebuild would rewrite files
  // other test files are importing right now.
  const pack = await sh(
    'npm',
    ['pack', '--silent', '--ignore-scripts', '--pack-destination', work],
    root,
  );
  expect(pack.status, pack.out).toBe(0);
  tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
  expect(tgz, pack.out).toBeTruthy();
  return tgz!;
}

it.each(['express', 'hono'])(
  'scaffolds --template %s against the packed kit, installs, and passes its own tests',
  {
    timeout: 300_000,
  },
  async (template) => {
    const tgz = await packedKit();

    const created = await sh(
      process.execPath,
      [
        join(root, 'create-app', 'dist', 'index.js'),
        `my-${template}-app`,
        '--template',
        template,
        '--kit',
        join(work, tgz),
        '--no-git',
        '--no-install',
      ],
      work,
    );
    expect(created.status, created.out).toBe(0);
    expect(created.out).toContain('npm run dev');
    const app = join(work, `my-${template}-app`);
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(pkg.dependencies['store-app-kit']).toBe(`file:${join(work, tgz)}`);
    if (template === 'hono') expect(pkg.dependencies['hono']).toBeTruthy();

    // better-sqlite3 has no reachable prebuilt binary here, and compiling it takes minutes on
    // a small CI machine: install without scripts, then reuse the binary this repository's own
    // install built (same package version, Node and platform), or rebuild when they differ.
    const install = await sh(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'],
      app,
    );
    expect(install.status, install.out).toBe(0);
    const ours = join(root, 'node_modules', 'better-sqlite3');
    const theirs = join(app, 'node_modules', 'better-sqlite3');
    const version = (dir: string) =>
      JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
    if (existsSync(join(ours, 'build', 'Release')) && version(ours) === version(theirs)) {
      cpSync(join(ours, 'build', 'Release'), join(theirs, 'build', 'Release'), { recursive: true });
    } else {
      const rebuild = await sh('npm', ['rebuild', 'better-sqlite3'], app);
      expect(rebuild.status, rebuild.out).toBe(0);
    }
    const typecheck = await sh('npm', ['run', 'typecheck'], app);
    expect(typecheck.status, typecheck.out).toBe(0);
    const test = await sh('npm', ['test'], app);
    expect(test.status, test.out).toBe(0);
  },
);
