/**
 * The type the platform's modules share for its database. Drizzle's
 * driver-neutral SQLite type, not `BetterSQLite3Database`: the declarations of
 * `store-app-kit/platform` reach this file, and a consumer compiling with
 * `skipLibCheck: false` must not need `@types/better-sqlite3` (not one of our
 * dependencies) for them. Opening the database: `./open.ts`.
 */
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';

/** What a better-sqlite3 statement's `run()` answers (the same shape as its `RunResult`). */
export interface PlatformRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export type PlatformDb = BaseSQLiteDatabase<'sync', PlatformRunResult>;
