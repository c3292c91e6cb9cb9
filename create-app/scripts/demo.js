// `npm run demo` (repository root): runs templates/express, the same code
// `create-store-app` writes, against the local platform on SQLite.
//
// The template imports `store-app-kit`, but it has its own package.json, so
// Node's package self-reference does not reach the repository root. We link
// templates/express/node_modules/store-app-kit -> the repository root (the
// built dist/ and migrations/ are what the package exports) and compile the
// template with the root's TypeScript. The demo itself runs in `.demo/` at the
// repository root (gitignored), never in templates/: its compiled files, its
// .env with fresh secrets, the local platform's database (.demo/.dev/) and the
// app's (.demo/data/) live there, so nothing a demo run writes can be packed
// into create-store-app (whose prepack refuses such files anyway). `--dir <dir>`
// runs it elsewhere. Its other dependencies (express, drizzle-orm) resolve
// from the root node_modules by Node's normal lookup (.demo/ is inside the
// repository; a --dir outside it gets links to them).
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
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

/** Makes `<dir>/node_modules/<name>` a link to `target` (idempotent, safe against a parallel run). */
function linkPackage(dir, name, target) {
  const link = join(dir, 'node_modules', name);
  mkdirSync(dirname(link), { recursive: true });
  const linked = () => {
    try {
      return (
        lstatSync(link).isSymbolicLink() && resolve(dirname(link), readlinkSync(link)) === target
      );
    } catch {
      return false;
    }
  };
  if (linked()) return;
  rmSync(link, { recursive: true, force: true });
  try {
    symlinkSync(
      relative(dirname(link), target),
      link,
      process.platform === 'win32' ? 'junction' : 'dir',
    );
  } catch (err) {
    // Another run (tests run in parallel) made the same link first.
    if (err.code !== 'EEXIST' || !linked()) throw err;
  }
}

// 1. Link the kit into the template (for its type check and compile).
linkPackage(template, 'store-app-kit', root);

// 2. Compile the scaffolder (for its .env writer) and the template. `--prepare-only` compiles
// to templates/express/dist (or `--out-dir <dir>` inside templates/express, so `store-app-kit`
// still resolves, which lets a test compile its own copy) for the tests; the demo compiles to
// its own directory.
const prepareOnly = process.argv.includes('--prepare-only');
const option = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? resolve(process.argv[i + 1]) : undefined;
};
const demoDir = option('--dir') ?? join(root, '.demo');
const outDir =
  option('--out-dir') ?? (prepareOnly ? join(template, 'dist') : join(demoDir, 'dist'));
if (!prepareOnly) {
  run([tsc, '-p', join(root, 'create-app', 'tsconfig.json')], 'compiling create-app');
}
run(
  [tsc, '-p', join(template, 'tsconfig.build.json'), '--outDir', outDir],
  'compiling templates/express',
);

// The browser test runs the template itself, with its own ports and settings.
if (prepareOnly) process.exit(0);

// 3. The demo's directory: the compiled app resolves `store-app-kit` through its own link;
// a .env with fresh secrets, written once, so restarts keep the database readable.
linkPackage(demoDir, 'store-app-kit', root);
if (relative(root, demoDir).startsWith('..')) {
  // Outside the repository Node's lookup does not reach the root node_modules: link the
  // template's other dependencies from there.
  const { dependencies } = JSON.parse(readFileSync(join(template, 'package.json'), 'utf8'));
  for (const name of Object.keys(dependencies)) {
    if (name !== 'store-app-kit') linkPackage(demoDir, name, join(root, 'node_modules', name));
  }
}
const envFile = join(demoDir, '.env');
if (!existsSync(envFile)) {
  const { generateSecrets, renderEnv } = await import('../dist/secrets.js');
  writeFileSync(envFile, renderEnv(generateSecrets()), { mode: 0o600 });
  console.log(`demo: wrote ${relative(root, envFile)} with fresh secrets`);
}

// 4. Platform + app in one process, in the demo's directory (its state: .dev/ and data/
// there); it prints the admin URL to open.
const child = spawn(process.execPath, [join(outDir, 'dev.js')], {
  cwd: demoDir,
  stdio: 'inherit',
  env: process.env,
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
