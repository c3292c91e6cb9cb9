// `npm run demo` (repository root): runs the Express template, laid out as
// `create-store-app` lays it (templates/_shared, then templates/express, by the
// scaffolder's own `layTemplate`), against the local platform on SQLite.
//
// The demo runs in `.demo/` at the repository root (gitignored), never in
// templates/: the laid-out sources, their compiled files, a .env with fresh
// secrets, the local platform's database (.demo/.dev/) and the app's
// (.demo/data/) live there, so nothing a demo run writes can be packed into
// create-store-app (whose prepack refuses such files anyway). `--dir <dir>`
// runs it elsewhere. The sources are laid again on every run (the .env and
// the databases are kept). `store-app-kit` resolves through a link to the
// repository root (its built dist/ and migrations/ are what the package
// exports); express and drizzle-orm from the root node_modules by Node's
// normal lookup (a --dir outside the repository gets links to them).
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
    // Another run made the same link first.
    if (err.code !== 'EEXIST' || !linked()) throw err;
  }
}

const option = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? resolve(process.argv[i + 1]) : undefined;
};
const demoDir = option('--dir') ?? join(root, '.demo');

// 1. Compile the scaffolder: its layTemplate lays the sources, its .env writer makes the secrets.
run([tsc, '-p', join(root, 'create-app', 'tsconfig.json')], 'compiling create-app');
const { layTemplate } = await import('../dist/scaffold.js');

// 2. Lay the template into the demo's directory (sources from a previous run removed first,
// so a file deleted from the template does not linger), link the kit, compile.
for (const stale of ['src', 'test', 'dist'])
  rmSync(join(demoDir, stale), { recursive: true, force: true });
mkdirSync(demoDir, { recursive: true });
await layTemplate(join(root, 'templates'), 'express', demoDir);
linkPackage(demoDir, 'store-app-kit', root);
if (relative(root, demoDir).startsWith('..')) {
  // Outside the repository Node's lookup does not reach the root node_modules: link the
  // template's other dependencies (and the type packages its compile reads) from there.
  const pkg = JSON.parse(readFileSync(join(demoDir, 'package.json'), 'utf8'));
  const names = [
    ...Object.keys(pkg.dependencies),
    ...Object.keys(pkg.devDependencies).filter((n) => n.startsWith('@types/')),
  ];
  for (const name of names) {
    if (name !== 'store-app-kit') linkPackage(demoDir, name, join(root, 'node_modules', name));
  }
}
run([tsc, '-p', join(demoDir, 'tsconfig.build.json')], 'compiling the template');

// 3. A .env with fresh secrets, written once, so restarts keep the database readable.
const envFile = join(demoDir, '.env');
if (!existsSync(envFile)) {
  const { generateSecrets, renderEnv } = await import('../dist/secrets.js');
  writeFileSync(envFile, renderEnv(generateSecrets()), { mode: 0o600 });
  console.log(`demo: wrote ${relative(root, envFile)} with fresh secrets`);
}

// 4. Platform + app in one process, in the demo's directory (its state: .dev/ and data/
// there); it prints the admin URL to open.
const child = spawn(process.execPath, [join(demoDir, 'dist', 'dev.js')], {
  cwd: demoDir,
  stdio: 'inherit',
  env: process.env,
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
