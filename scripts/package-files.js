// What may be in the two tarballs, checked by `npm run check:package` (and
// test/packaging/package-files.test.ts). An allowlist, not a denylist: a file
// nobody meant to ship (a demo's database, a .env, a local platform's .dev/)
// fails the check whatever its name.
//   store-app-kit     package.json, README.md, CHANGELOG.md, LICENSE, openapi.json; dist/ as
//                     .js and .d.ts only; docs/ and migrations/ exactly as
//                     committed; every `exports` and `bin` target present
//   create-store-app  package.json, README.md, LICENSE; dist/ as .js only;
//                     templates/ exactly as committed in the repository's
//                     templates/ (nothing a demo, a test or a build wrote there)
import { spawnSync } from 'node:child_process';

const STATE =
  /(^|\/)(\.env(\..*)?|\.dev\/.*|data\/.*|\.demo\/.*|[^/]+\.(db|sqlite3?)(-journal|-wal|-shm)?)$/;

/** The files in a packed tarball, relative to its `package/` folder. */
export function tarballFiles(tarball) {
  const r = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar -tzf ${tarball} failed: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((l) => l && !l.endsWith('/'))
    .map((l) => l.replace(/^package\//, ''));
}

/** Files committed under `dirs` in the git checkout at `root`. */
export function committedFiles(root, dirs) {
  const r = spawnSync('git', ['ls-files', '-z', '--', ...dirs], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ls-files failed in ${root}: ${r.stderr}`);
  return r.stdout.split('\0').filter(Boolean);
}

/** The targets a package.json's `exports` and `bin` name, without `./`. */
function targets(pkg) {
  const out = [];
  const walk = (v) => {
    if (typeof v === 'string') out.push(v);
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(pkg.exports);
  walk(pkg.bin);
  return out.filter((t) => !t.includes('*')).map((t) => t.replace(/^\.\//, ''));
}

/**
 * What is wrong with a tarball's file list: one line per file that must not
 * be there or is missing. `committed` is the repository's files under the
 * folders that ship as they are (kit: docs/, migrations/; create-store-app:
 * templates/).
 */
export function packProblems(kind, { files, committed, pkg }) {
  const problems = [];
  const have = new Set(files);
  const top =
    kind === 'kit'
      ? ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'openapi.json']
      : ['package.json', 'README.md', 'LICENSE'];
  const dist = kind === 'kit' ? /^dist\/.+\.(js|d\.ts)$/ : /^dist\/.+\.js$/;
  const asCommitted = new Set(committed);
  const shipsAsCommitted = kind === 'kit' ? /^(docs|migrations)\// : /^templates\//;
  for (const f of files) {
    if (STATE.test(f))
      problems.push(`${f}: local state (a database, .env or .dev/) must never be packed`);
    else if (top.includes(f) || dist.test(f)) continue;
    else if (shipsAsCommitted.test(f)) {
      if (!asCommitted.has(f))
        problems.push(`${f}: not a committed file (written by a run or a build?)`);
    } else problems.push(`${f}: not expected in the ${kind} tarball`);
  }
  for (const f of committed)
    if (!have.has(f)) problems.push(`${f}: committed but missing from the tarball`);
  for (const f of [...top.filter((t) => t !== 'LICENSE' || pkg.license), ...targets(pkg)]) {
    if (!have.has(f)) problems.push(`${f}: missing (named by package.json)`);
  }
  return problems;
}
