/**
 * `kit.purge(storeId)`: delete everything held for a store (the kit's rows
 * and the app's store-scoped tables) in one transaction, via `storage.purge`.
 * Used by the purge outbox of the built-in `app.uninstalled` handler and by
 * the app. Never by an error answer from the platform (token_revoked flags).
 */

import type { MinimalLogger } from '../core/logger.js';
import { isStoreId, STORE_ID_RULE } from '../core/store-id.js';
import { parseOptions } from '../options/index.js';
import { validateStoreScopedTables } from '../storage/scoped-tables.js';
import type { Dialect, PurgeResult, Storage } from '../storage/types.js';
import { ATTR, countPurge, inSpan, SPAN } from '../telemetry/index.js';
import {
  type PurgeAppOptions,
  purgeAppOptionsSchema,
  type ResolvedPurgeAppOptions,
  storeScopedTablesNeedBuiltin,
} from './options.js';

export type { PurgeAppOptions, ResolvedPurgeAppOptions } from './options.js';

/**
 * Validates the app's purge options once, at kit creation: every declared
 * table must be a Drizzle table of the storage's dialect with a `store_id`
 * column, and no table may be declared twice.
 */
export function resolvePurgeAppOptions(
  options: PurgeAppOptions,
  dialect: Dialect | 'custom',
): ResolvedPurgeAppOptions {
  const parsed = parseOptions(purgeAppOptionsSchema, options);
  if (dialect === 'custom') {
    if (parsed.storeScopedTables.length > 0) throw storeScopedTablesNeedBuiltin();
    return { storeScopedTables: [], onPurge: parsed.onPurge };
  }
  // Storage owns the rule (dialect, store_id column, no kit tables, no
  // duplicates); calling it here makes a mistake fail at start, not at the
  // first uninstall.
  validateStoreScopedTables(parsed.storeScopedTables, dialect, 'storeScopedTables');
  return { storeScopedTables: parsed.storeScopedTables, onPurge: parsed.onPurge };
}

export interface PurgeRunOptions {
  /**
   * Purge only an installation made before this instant; a newer one (a
   * reinstall after the uninstall event was sent) is left alone.
   * @default undefined (purge whatever is there)
   */
  ifInstalledBefore?: Date;
  /**
   * The outbox's second pass after a committed purge (see
   * `AdapterPurgeOptions.sweep`); only with `ifInstalledBefore`.
   * @default false
   */
  sweep?: boolean;
  /**
   * Called once the purge's transaction has committed (or found nothing to
   * do), before its scrub: the outbox frees the purge's slot there.
   * @default undefined
   */
  onCommitted?: () => void;
  /**
   * The outbox entry this purge works, settled in the purge's own
   * transaction (see `AdapterPurgeOptions.outbox`).
   * @default undefined
   */
  outbox?: { eventId: string; sweepAfterMs: number };
}

export type PurgeFunction = (storeId: string, options?: PurgeRunOptions) => Promise<PurgeResult>;

/**
 * Builds `kit.purge`. Concurrent purges of one store in this process share
 * one run (same `ifInstalledBefore`), so 100 parallel redeliveries cost one
 * transaction; storage keeps the purge atomic across processes.
 */
export function createPurge(deps: {
  storage: Pick<Storage, 'purge'>;
  options: ResolvedPurgeAppOptions;
  logger?: MinimalLogger;
}): PurgeFunction {
  const { storage, options, logger } = deps;
  const inFlight = new Map<string, Promise<PurgeResult>>();

  return function purge(storeId, runOptions = {}) {
    if (!isStoreId(storeId)) {
      return Promise.reject(
        new TypeError(`purge(storeId): storeId is not a store id (${STORE_ID_RULE})`),
      );
    }
    const key = `${storeId}\n${runOptions.ifInstalledBefore?.getTime() ?? ''}\n${runOptions.sweep === true}\n${runOptions.outbox?.eventId ?? ''}`;
    const running = inFlight.get(key);
    if (running) return running;
    const run = inSpan(
      SPAN.purge,
      { operation: 'purge', attributes: () => ({ [ATTR.storeId]: storeId }) },
      async (span) => {
        const started = performance.now();
        try {
          const result = await storage.purge(storeId, {
            tables: options.storeScopedTables,
            ...(options.onPurge ? { onPurge: options.onPurge } : {}),
            ...(runOptions.ifInstalledBefore
              ? { ifInstalledBefore: runOptions.ifInstalledBefore }
              : {}),
            ...(runOptions.sweep && runOptions.ifInstalledBefore ? { sweep: true } : {}),
            // A caller joining a run already going is not told: it frees its slot when the run ends.
            ...(runOptions.onCommitted ? { onCommitted: runOptions.onCommitted } : {}),
            ...(runOptions.outbox ? { outbox: runOptions.outbox } : {}),
          });
          const outcome = result.purged ? 'purged' : 'skipped';
          countPurge(outcome);
          if (span.isRecording()) span.setAttribute(ATTR.outcome, outcome);
          // Counts per table and the store id only: never row contents.
          logger?.info(
            {
              storeId,
              purged: result.purged,
              counts: result.counts,
              ms: Math.round(performance.now() - started),
            },
            result.purged
              ? 'store data purged'
              : 'purge skipped: the store was reinstalled after the uninstall',
          );
          return result;
        } catch (err) {
          countPurge('failed');
          if (span.isRecording()) span.setAttribute(ATTR.outcome, 'failed');
          logger?.error({ storeId, err }, 'store purge failed and was rolled back');
          throw err;
        } finally {
          inFlight.delete(key);
        }
      },
    );
    inFlight.set(key, run);
    return run;
  };
}
