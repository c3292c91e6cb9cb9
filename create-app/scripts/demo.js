// `npm run demo` (repository root): runs templates/express, the same code
// `create-store-app` writes, against the local platform on SQLite.
//
// The template imports `store-app-kit`, but it has its own package.json, so
// Node's package self-reference does not reach the repository root. We link
// templates/express/node_modules/store-app-kit -> the repository root (the
// built dist/ and migrations/ are what the package exports), compile the
// template with the root's TypeScript, give it a .env with fresh secrets on
// first run, and start its `dev` entry. Its other dependencies (express,
// drizzle-orm) resolve from the root node_modules by Node's normal lookup.
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const template = join(root, 'templates', 'express');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

function run(args, what) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`demo: ${what} failed`);
    process.exit(1);
  }
}

if (
  !existsSync(join(root, 'dist', 'index.js')) ||
  !existsSync(join(root, 'dist', 'platform', 'index.js'))
) {
  console.error('demo: the kit is not built; run `npm run build` (npm run demo does it for you).');
  process.exit(1);
}

// 1. Link the kit into the template.
const link = join(template, 'node_modules', 'store-app-kit');
mkdirSync(dirname(link), { recursive: true });
function linkedToRoot() {
  try {
    return lstatSync(link).isSymbolicLink() && resolve(dirname(link), readlinkSync(link)) === root;
  } catch {
    return false;
  }
}
if (!linkedToRoot()) {
  rmSync(link, { recursive: true, force: true });
  try {
    symlinkSync(
      relative(dirname(link), root),
      link,
      process.platform === 'win32' ? 'junction' : 'dir',
    );
  } catch (err) {
    // Another run (tests run in parallel) made the same link first.
    if (err.code !== 'EEXIST' || !linkedToRoot()) throw err;
  }
}

// 2. Compile the scaffolder (for its .env writer) and the template. `--out-dir <dir>` (inside
// templates/express, so `store-app-kit` still resolves) lets a test compile its own copy
// while another run uses dist/.
const outIndex = process.argv.indexOf('--out-dir');
const outDir = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : join(template, 'dist');
if (!process.argv.includes('--prepare-only')) {
  run([tsc, '-p', join(root, 'create-app', 'tsconfig.json')], 'compiling create-app');
}
run(
  [tsc, '-p', join(template, 'tsconfig.build.json'), '--outDir', outDir],
  'compiling templates/express',
);

// The browser test runs the template itself, with its own ports and settings.
if (process.argv.includes('--prepare-only')) process.exit(0);

// 3. A .env with fresh secrets, written once (gitignored) so restarts keep the database readable.
const envFile = join(template, '.env');
if (!existsSync(envFile)) {
  const { generateSecrets, renderEnv } = await import('../dist/secrets.js');
  writeFileSync(envFile, renderEnv(generateSecrets()), { mode: 0o600 });
  console.log(`demo: wrote ${relative(root, envFile)} with fresh secrets`);
}

// 4. Platform + app in one process; it prints the admin URL to open.
const child = spawn(process.execPath, [join(outDir, 'dev.js')], {
  cwd: template,
  stdio: 'inherit',
  env: process.env,
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
