/**
 * What the app tells the kit about its own data so the purge can delete it.
 * Top-level options of `storeApp()` (the purge serves the `app.uninstalled`
 * webhook and `kit.purge()`).
 */
import type { AnyDrizzle, StoreScopedTable } from '../storage/types.js';

export interface PurgeAppOptions {
  /**
   * The app's own Drizzle tables whose rows belong to one store. Each must
   * have a column whose SQL name is `store_id`; the kit refuses to start
   * otherwise. On uninstall every row of the store is deleted from each, in
   * the same transaction as the kit's own rows.
   * @default []
   */
  storeScopedTables?: readonly StoreScopedTable[];
  /**
   * Runs inside the purge transaction, after the tables above are emptied,
   * for anything else the app holds for the store (files, external systems).
   * Throwing rolls the whole purge back; the purge outbox retries it with
   * backoff until it succeeds, so make it idempotent.
   * @default undefined
   */
  onPurge?: (storeId: string, tx: AnyDrizzle) => Promise<void> | void;
}

export interface ResolvedPurgeAppOptions {
  storeScopedTables: readonly StoreScopedTable[];
  onPurge: ((storeId: string, tx: AnyDrizzle) => Promise<void> | void) | undefined;
}
