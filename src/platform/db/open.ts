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

const MIGRATION_SETS = [
  { folder: 'platform-store', table: '__platform_store_migrations' },
  { folder: 'platform-auth', table: '__platform_auth_migrations' },
] as const;

/** Opens (and migrates) the platform database. `file` undefined or ':memory:' keeps it in memory. */
export function openPlatformDb(file?: string): PlatformDatabase {
  const sqlite = new Database(file ?? ':memory:');
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
