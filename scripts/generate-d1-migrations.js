// The kit's D1 migrations, generated from drizzle-kit's SQLite output
// (migrations/sqlite, itself generated from src/storage/schema/sqlite.ts): D1
// is SQLite, so the statements are the same; only the packaging differs.
//   - migrations/d1/NNNN_store_app_<tag>.sql: a wrangler D1 migrations folder
//     (`wrangler d1 migrations apply` reads it; the `store_app` in each name
//     keeps the files apart from an app's own when copied into its folder).
//   - src/storage/d1/migrations.ts: the same statements as a module, for the
//     adapter's opt-in "apply at first request" (a Worker has no file system).
// `node scripts/generate-d1-migrations.js` after `drizzle-kit generate` for
// SQLite; with `--check` it changes nothing and exits 1 when either output is
// out of date (test/storage/d1-migrations.test.ts runs it).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sqliteDir = join(root, 'migrations/sqlite');
const d1Dir = join(root, 'migrations/d1');
const moduleFile = join(root, 'src/storage/d1/migrations.ts');

/** drizzle-kit's journal order, each migration split at its statement breakpoints. */
export function readSqliteMigrations() {
  const journal = JSON.parse(readFileSync(join(sqliteDir, 'meta/_journal.json'), 'utf8'));
  return journal.entries.map(({ tag }) => {
    const text = readFileSync(join(sqliteDir, `${tag}.sql`), 'utf8');
    const statements = text
      .split('--> statement-breakpoint')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const [number, ...rest] = tag.split('_');
    return { name: `${number}_store_app_${rest.join('_')}.sql`, statements };
  });
}

/** What the two outputs must contain, by path. */
export function renderD1Migrations() {
  const migrations = readSqliteMigrations();
  const files = new Map();
  for (const m of migrations) {
    const header = `-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.\n`;
    files.set(join(d1Dir, m.name), `${header}${m.statements.join('\n\n')}\n`);
  }
  const body = migrations
    .map(
      (m) =>
        `  {\n    name: ${JSON.stringify(m.name)},\n    statements: ${JSON.stringify(m.statements, null, 2).replaceAll('\n', '\n    ')},\n  },`,
    )
    .join('\n');
  files.set(
    moduleFile,
    `// Generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.\n` +
      `// The same statements as migrations/d1/*.sql, for d1Adapter's applyMigrations.\n\n` +
      `/** The kit's D1 migrations in order: wrangler's file name and the statements. */\n` +
      `export const D1_MIGRATIONS: ReadonlyArray<{ name: string; statements: readonly string[] }> = [\n${body}\n];\n`,
  );
  return files;
}

/** Paths whose content differs from what they must contain (or that must not exist). */
export function staleD1Migrations() {
  const files = renderD1Migrations();
  const stale = [];
  for (const [path, content] of files) {
    if (!existsSync(path) || readFileSync(path, 'utf8') !== content) stale.push(path);
  }
  if (existsSync(d1Dir)) {
    for (const name of readdirSync(d1Dir)) {
      if (!files.has(join(d1Dir, name))) stale.push(join(d1Dir, name));
    }
  }
  return stale;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = staleD1Migrations();
    if (stale.length > 0) {
      console.error(
        `D1 migrations out of date with migrations/sqlite: ${stale.map((p) => p.slice(root.length + 1)).join(', ')}; run \`node scripts/generate-d1-migrations.js\``,
      );
      process.exit(1);
    }
  } else {
    rmSync(d1Dir, { recursive: true, force: true });
    mkdirSync(d1Dir, { recursive: true });
    for (const [path, content] of renderD1Migrations()) writeFileSync(path, content);
  }
}
