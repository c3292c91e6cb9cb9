// prepack: ship the repository's templates/ inside the package. Build outputs
// (node_modules/, dist/, the Workers template's src/generated/: the tests link and compile
// the template in place) are
// left out; local state is refused, not skipped: a database, a .env or a
// platform's .dev/ folder in templates/ holds someone's secrets and stores
// (the demo runs in .demo/, never in templates/), and packing around it would
// hide that something wrote it there.
//   node scripts/copy-templates.js [from] [to]   (defaults: ../templates, ./templates)
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const from = resolve(process.argv[2] ?? join(pkg, '..', 'templates'));
const to = resolve(process.argv[3] ?? join(pkg, 'templates'));
const buildOutputs = new Set(['node_modules', 'dist', 'generated']);
const stateDirs = new Set(['.dev', 'data', 'test-artifacts', '.demo', '.wrangler']);
const isStateFile = (name) =>
  (name.startsWith('.env') && name !== '.env.example') ||
  (name.startsWith('.dev.vars') && name !== '.dev.vars.example') ||
  /\.(db|sqlite|sqlite3)(-journal|-wal|-shm)?$/.test(name);

/** Local state under `dir` (relative paths), build outputs not searched. */
function stateIn(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (buildOutputs.has(entry.name)) continue;
      if (stateDirs.has(entry.name)) found.push(`${relative(from, path)}/`);
      else found.push(...stateIn(path));
    } else if (isStateFile(entry.name)) found.push(relative(from, path));
  }
  return found;
}

const state = stateIn(from);
if (state.length > 0) {
  console.error(
    `copy-templates: refusing to pack local state found in ${from}:\n` +
      state.map((p) => `  ${p}\n`).join('') +
      'These are databases, secrets or a local platform left by a run (an older `npm run demo` ran in\n' +
      'templates/express; it now runs in .demo/). Delete them, then pack again.',
  );
  process.exit(1);
}
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (src) => !buildOutputs.has(basename(src)) });
console.log(`copied ${from} -> ${to}`);
