/**
 * The built-in storage (SQLite, Postgres) as a StorageAdapter: the operations
 * of ./repositories.ts, ./purge-outbox.ts and ./sessions.ts over one dialect
 * adapter. Besides the contract it carries what the kit hands the app for the
 * built-in dialects only: the Drizzle handle (`kit.db`), transactions across
 * kit and app tables, and deleting the app's store-scoped tables in a purge.
 */
import { sql } from 'drizzle-orm';
import type { DialectAdapter } from './adapter.js';
import type { PurgeCounts, StorageAdapter } from './contract.js';
import { createPendingPurgeRepository } from './purge-outbox.js';
import {
  createClaims,
  createInstallationRepository,
  createPurge,
  createWebhookRepository,
  deleteStoreRows,
  type ScopedTable,
  validateStoreScopedTables,
} from './repositories.js';
import { createSessionRepository } from './sessions.js';
import type { AnyDrizzle, Dialect, StoreScopedTable } from './types.js';

export interface BuiltinStorageAdapter extends StorageAdapter<AnyDrizzle> {
  readonly dialect: Dialect;
  /** The Drizzle handle, so the app can keep its own tables in the same database. */
  readonly db: AnyDrizzle;
  /** One transaction across kit and app tables; kit calls inside it join it. */
  transaction<T>(fn: (tx: AnyDrizzle) => Promise<T>): Promise<T>;
  /** Checks the app's tables (dialect, `store_id` column) once; throws ConfigError. */
  scopedTables(tables: readonly StoreScopedTable[]): ScopedTable[];
  /** Deletes the store's rows of checked app tables, inside the current transaction. */
  deleteStoreRows(scoped: readonly ScopedTable[], storeId: string): Promise<PurgeCounts>;
}

export function createBuiltinAdapter(adapter: DialectAdapter): BuiltinStorageAdapter {
  const { installations, refreshLease } = createInstallationRepository(adapter);
  const purgeOutbox = createPendingPurgeRepository(adapter);
  // kit.purge passes the same array every time: check it once, not per purge.
  const checked = new WeakMap<readonly StoreScopedTable[], ScopedTable[]>();
  return {
    name: adapter.dialect,
    dialect: adapter.dialect,
    db: adapter.db,
    installations,
    refreshLease,
    claimOnce: createClaims(adapter),
    webhooks: createWebhookRepository(adapter, purgeOutbox),
    purgeOutbox,
    sessions: createSessionRepository(adapter),
    purge: createPurge(adapter),
    clock: () => readDatabaseClock(adapter),
    transaction: (fn) => adapter.transaction(fn),
    scopedTables(tables) {
      let scoped = checked.get(tables);
      if (!scoped) {
        scoped = validateStoreScopedTables(tables, adapter.dialect);
        checked.set(tables, scoped);
      }
      return scoped;
    },
    deleteStoreRows: (scoped, storeId) => deleteStoreRows(adapter, scoped, storeId),
    migrate: () => adapter.migrate(),
    close: () => adapter.close(),
  };
}

/**
 * One reading of the database's clock (Postgres `clock_timestamp()`, the
 * real time even inside a transaction; MySQL `NOW(6)`; SQLite `julianday('now')`,
 * the host's clock: one host, one clock).
 */
export async function readDatabaseClock(adapter: DialectAdapter): Promise<Date> {
  const ms = await adapter.run('reading the database clock', async (db) => {
    // biome-ignore lint/suspicious/noExplicitAny: each dialect's raw-query call.
    const d = db as any;
    if (adapter.dialect === 'postgres') {
      const r = await d.execute(sql`SELECT extract(epoch from clock_timestamp()) * 1000 AS ms`);
      return r.rows[0]?.ms;
    }
    if (adapter.dialect === 'mysql') {
      const [rows] = await d.execute(sql`SELECT UNIX_TIMESTAMP(NOW(6)) * 1000 AS ms`);
      return rows[0]?.ms;
    }
    const rows = await d.all(sql`SELECT (julianday('now') - 2440587.5) * 86400000.0 AS ms`);
    return rows[0]?.ms;
  });
  return new Date(Math.round(Number(ms)));
}
