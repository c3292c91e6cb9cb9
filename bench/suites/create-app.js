// create-store-app without install: wall time of the real CLI process (node
// start, prompts skipped, files, .env, git init + commit) against a baseline
// measured in the same run: a node process that only copies the template.
// Target: under 3 s. Builds create-app/dist first if it is missing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compare, report } from '../lib.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'create-app', 'dist', 'index.js');
if (!existsSync(bin)) {
  spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'create-app'], {
    cwd: root,
    stdio: 'inherit',
  });
}
const work = mkdtempSync(join(tmpdir(), 'bench-create-app-'));
const template = join(root, 'templates', 'express');
let n = 0;

function timed(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, {
    cwd: work,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${args.join(' ')}`);
  return performance.now() - t0;
}

const scaffoldNoGit = () => timed([bin, `app-${n++}`, '--no-install', '--no-git']);
const scaffoldGit = () => timed([bin, `app-${n++}`, '--no-install']);
const copyOnly = () =>
  timed([
    '-e',
    `require('node:fs').cpSync(${JSON.stringify(template)}, 'copy-${n++}', { recursive: true, filter: (s) => !/node_modules|dist$/.test(s) })`,
  ]);

try {
  const noGit = await compare(7, scaffoldNoGit, copyOnly);
  report('scaffold --no-install --no-git vs copy-only node process', {
    scaffold_ms: noGit.a,
    copy_ms: noGit.b,
    ratio: noGit.ratio,
  });
  const git = await compare(5, scaffoldGit, copyOnly);
  report('scaffold --no-install (git init + commit) vs copy-only node process', {
    scaffold_ms: git.a,
    copy_ms: git.b,
    ratio: git.ratio,
    under_3s: git.a < 3000 ? 'yes' : 'NO',
  });
  if (git.a >= 3000) process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
