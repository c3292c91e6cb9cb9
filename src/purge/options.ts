/**
 * What the app tells the kit about its own data so the purge can delete it.
 * Top-level options of `storeApp()` (the purge serves the `app.uninstalled`
 * webhook and `kit.purge()`).
 */
import * as v from 'valibot';
import { ConfigError } from '../errors/index.js';
import { fn, integer } from '../options/index.js';
import type { AnyDrizzle, StoreScopedTable } from '../storage/types.js';

export type OnPurge = (storeId: string, tx: AnyDrizzle) => Promise<void> | void;

/** Top-level entries of the `storeApp()` schema owned by the purge. */
export const purgeAppOptionsEntries = {
  /**
   * The app's own Drizzle tables whose rows belong to one store. Each must
   * have a column whose SQL name is `store_id`; the kit refuses to start
   * otherwise. On uninstall every row of the store is deleted from each, in
   * the same transaction as the kit's own rows.
   * @default []
   */
  storeScopedTables: v.optional(
    v.custom<readonly StoreScopedTable[]>(Array.isArray, 'must be an array of Drizzle tables.'),
    () => [],
  ),
  /**
   * Runs inside the purge transaction, after the tables above are emptied,
   * for anything else the app holds for the store (files, external systems).
   * Throwing rolls the whole purge back; the purge outbox retries it with
   * backoff until it succeeds, so make it idempotent.
   * @default undefined
   */
  onPurge: v.optional(fn<OnPurge>('must be a function (storeId, tx) => void | Promise<void>.')),
  /**
   * The purge horizon: how long after an uninstall's purge commits the kit
   * sweeps the store once more (its kit rows, `storeScopedTables`, `onPurge`),
   * deleting what requests in flight at the commit, or served by an instance
   * whose installation cache had not expired, wrote since; a reinstall in
   * between is never touched. 0 turns the sweep off.
   * @default refresh.cacheTtlMs + client.timeoutMs (30 s + 30 s)
   */
  purgeHorizonMs: v.optional(integer(0)),
};

export const purgeAppOptionsSchema = v.strictObject(purgeAppOptionsEntries);

export type PurgeAppOptions = v.InferInput<typeof purgeAppOptionsSchema>;

export interface ResolvedPurgeAppOptions {
  storeScopedTables: readonly StoreScopedTable[];
  onPurge: OnPurge | undefined;
  /** Resolved from `purgeHorizonMs` or its default (kit config only). */
  horizonMs?: number;
}

/** With `storage.adapter`, the kit cannot delete Drizzle tables: the app's `onPurge` does. */
export function storeScopedTablesNeedBuiltin(): ConfigError {
  return new ConfigError(
    'storeScopedTables',
    'needs the built-in database (DATABASE_URL); with storage.adapter, delete your store-scoped rows in onPurge(storeId, tx)',
  );
}
