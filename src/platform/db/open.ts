/**
 * The local platform's database: Drizzle over better-sqlite3, in memory by
 * default or a file (`--db`). Two migration sets, each owned by one side of the
 * platform: `migrations/platform-store` (stores and their resources) then
 * `migrations/platform-auth` (apps, codes, tokens, installs, deliveries).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import type { PlatformDb } from './index.js';

export interface PlatformDatabase {
  db: PlatformDb;
  sqlite: Database.Database;
  close(): void;
}

// src/platform/db and dist/platform/db are both three levels below the package root.
const MIGRATIONS_ROOT = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'migrations',
);

/** Page size of the in-memory database (see openPlatformDb). */
const IN_MEMORY_PAGE_SIZE = 16_384;

const MIGRATION_SETS = [
  { folder: 'platform-store', table: '__platform_store_migrations' },
  { folder: 'platform-auth', table: '__platform_auth_migrations' },
] as const;

/** Opens (and migrates) the platform database. `file` undefined or ':memory:' keeps it in memory. */
export function openPlatformDb(file?: string): PlatformDatabase {
  const inMemory = file === undefined || file === ':memory:';
  const sqlite = new Database(file ?? ':memory:');
  // In memory every page stays in SQLite's page cache, and a write that splits an index page
  // ends its transaction with a walk of that cache's whole hash table (pcache1TruncateUnsafe):
  // a cost per commit that grows with the database. 16 KB pages make that table a quarter as
  // long: a refresh grant with 100,000 stores installed went from ~500 to ~105 µs (issue 33).
  // Set before the first table exists; a file keeps the page size it was created with.
  if (inMemory) sqlite.pragma(`page_size = ${IN_MEMORY_PAGE_SIZE}`);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = drizzle(sqlite);
  for (const set of MIGRATION_SETS) {
    const folder = join(MIGRATIONS_ROOT, set.folder);
    if (existsSync(join(folder, 'meta', '_journal.json'))) {
      migrate(db, { migrationsFolder: folder, migrationsTable: set.table });
    }
  }
  return { db, sqlite, close: () => sqlite.close() };
}
