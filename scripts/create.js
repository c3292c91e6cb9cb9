#!/usr/bin/env node
// `npm run create -- <dir> [create-store-app flags]`: the first command, from
// this checkout, until the packages are on the registry. Builds and packs
// store-app-kit and create-store-app into .packs/ (kept: the new app's
// package.json points at the kit's tarball), then runs the packed
// create-store-app exactly as `npm create store-app@latest <dir>` would run the
// published one, with `--kit` set to the packed kit.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const packs = join(root, '.packs');

function run(cmd, args, cwd, what) {
  const r = spawnSync(cmd, args, { cwd, stdio: ['inherit', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    console.error(`create: ${what} failed`);
    process.exit(r.status ?? 1);
  }
}

const args = process.argv.slice(2);
if (args.length === 0 || args[0] === '--help' || args[0] === '-h') {
  console.log(
    'Usage: npm run create -- <directory> [create-store-app options]\n' +
      'Packs this checkout and scaffolds a new app against the packed kit.',
  );
  process.exit(args.length === 0 ? 2 : 0);
}

rmSync(packs, { recursive: true, force: true });
mkdirSync(packs);
console.log('create: packing store-app-kit and create-store-app (prepack builds both)');
run('npm', ['pack', '--silent', '--pack-destination', packs], root, 'npm pack (store-app-kit)');
run(
  'npm',
  ['pack', '--silent', '--pack-destination', packs],
  join(root, 'create-app'),
  'npm pack (create-store-app)',
);
const file = (prefix) =>
  join(
    packs,
    readdirSync(packs).find((f) => f.startsWith(prefix)),
  );
const kit = file('store-app-kit-');
const creator = file('create-store-app-');

// npx installs the packed scaffolder with its own dependencies and runs its bin.
// Relative directories are resolved against where `npm run create` was started.
const cwd = process.env['INIT_CWD'] ?? process.cwd();
run(
  'npx',
  ['--yes', '--package', creator, 'create-store-app', ...args, '--kit', kit],
  cwd,
  'create-store-app',
);
