// Copies the kit's D1 migrations (node_modules/store-app-kit/migrations/d1/*.sql) into
// migrations/, the folder `wrangler d1 migrations apply` reads, beside the app's own.
// Runs after every install (`postinstall`), so a new kit version brings its migrations
// along; they are the kit's files (`*_store_app_*.sql`, generated, never edited), so a
// copy already there is replaced. Commit them with the app's.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const kitRoot = dirname(
  createRequire(join(root, 'package.json')).resolve('store-app-kit/package.json'),
);
const from = join(kitRoot, 'migrations', 'd1');
const to = join(root, 'migrations');
mkdirSync(to, { recursive: true });
const files = readdirSync(from).filter((f) => f.endsWith('.sql'));
for (const f of files) copyFileSync(join(from, f), join(to, f));
console.log(`kit-migrations: ${files.length} store-app-kit migrations in migrations/`);
