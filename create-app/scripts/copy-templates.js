// prepack: ship the repository's templates/ inside the package, without the
// local state a repo demo run leaves in them.
import { cpSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const from = join(pkg, '..', 'templates');
const to = join(pkg, 'templates');
const skipped = new Set(['node_modules', 'dist', 'data', '.env', 'test-artifacts']);
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (src) => !skipped.has(basename(src)) });
console.log(`copied ${from} -> ${to}`);
