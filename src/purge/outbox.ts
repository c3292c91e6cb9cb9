/**
 * The purge outbox worker. An `app.uninstalled` event's purge is recorded
 * (storage.pendingPurges) in the same transaction as the event's dedupe row,
 * so once the platform has its acknowledgement the purge cannot be lost: it
 * is tried at once, retried with backoff until it succeeds, and resumed when
 * the app starts again after a crash. Every instance on the database works
 * the same outbox; the purge itself is idempotent and atomic.
 */

import { createOutageBackoff } from '../background/outage-backoff.js';
import { StoreAppError } from '../errors/index.js';
import type { PendingPurge, PendingPurgeRepository } from '../storage/types.js';
import type { MinimalLogger } from '../webhooks/types.js';
import type { PurgeFunction } from './index.js';

export interface PurgeOutbox {
  /**
   * Try the pending purge of `eventId` now (no-op when it is already done).
   * Resolves true when it is done, false when it failed and was rescheduled.
   */
  runNow(eventId: string): Promise<boolean>;
  /** Work every due pending purge once. Resolves with how many completed. */
  runDue(): Promise<number>;
  /** Every purge not yet done, oldest first (`kit.pendingPurges()`, `store-app purges`). */
  list(): Promise<PendingPurge[]>;
  /** Resume pending purges now and keep working them (an unref'd timer). Idempotent. */
  start(): void;
  /** Stop the timer and wait for running attempts. */
  close(): Promise<void>;
}

export interface PurgeOutboxDeps {
  pendingPurges: PendingPurgeRepository;
  purge: PurgeFunction;
  logger?: MinimalLogger;
  /** First retry delay; doubles per attempt. @default 1000 */
  baseDelayMs?: number;
  /** Longest retry delay. @default 300000 (5 minutes) */
  maxDelayMs?: number;
  /** How often the timer looks for due purges (others' too). @default 2000 */
  pollMs?: number;
  /** Pending purges worked per pass. @default 50 */
  batchSize?: number;
}

const errorCode = (err: unknown): string =>
  err instanceof StoreAppError ? err.code : err instanceof Error ? err.name : 'UNKNOWN';

export function createPurgeOutbox(deps: PurgeOutboxDeps): PurgeOutbox {
  const { pendingPurges, purge, logger } = deps;
  const baseDelayMs = deps.baseDelayMs ?? 1000;
  const maxDelayMs = deps.maxDelayMs ?? 300_000;
  const pollMs = deps.pollMs ?? 2000;
  const batchSize = deps.batchSize ?? 50;
  const running = new Map<string, Promise<boolean>>();
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<unknown> | undefined;
  // A database that fails pauses the passes (doubling) instead of a full pass every poll.
  const outage = createOutageBackoff({ baseMs: pollMs, maxMs: Math.max(pollMs, 60_000) });

  async function attempt(entry: PendingPurge): Promise<boolean> {
    const ids = { storeId: entry.storeId, eventId: entry.eventId };
    try {
      const result = await purge(entry.storeId, { ifInstalledBefore: entry.eventAt });
      await pendingPurges.complete(entry.eventId);
      logger?.info(
        { event: 'purge.completed', ...ids, purged: result.purged, attempts: entry.attempts + 1 },
        'pending purge done',
      );
      return true;
    } catch (err) {
      const attempts = entry.attempts + 1;
      const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempts - 1));
      // Full jitter on the upper half: instances retrying together spread out.
      const delay = Math.round(cap / 2 + Math.random() * (cap / 2));
      const nextAttemptAt = new Date(Date.now() + delay);
      const code = errorCode(err);
      try {
        await pendingPurges.recordFailure(entry.eventId, nextAttemptAt, code);
      } catch {
        // The database is down: the row is still there and due; the next pass retries.
      }
      logger?.warn(
        { event: 'purge.retry_scheduled', ...ids, attempts, errorCode: code, nextAttemptAt },
        'pending purge failed; retrying with backoff',
      );
      return false;
    }
  }

  /** Single-flight per event in this process. */
  function work(entry: PendingPurge): Promise<boolean> {
    let p = running.get(entry.eventId);
    if (!p) {
      p = attempt(entry).finally(() => running.delete(entry.eventId));
      running.set(entry.eventId, p);
    }
    return p;
  }

  async function runDue(): Promise<number> {
    const due = await pendingPurges.due(new Date(), batchSize);
    const results = await Promise.all(due.map(work));
    return results.filter(Boolean).length;
  }

  function tick(): void {
    if (pass || !outage.ready()) return;
    pass = runDue()
      .then(
        () => outage.record(undefined),
        (err: unknown) => {
          outage.record(err);
          logger?.warn(
            {
              event: 'purge.outbox_unavailable',
              errorCode: errorCode(err),
              failures: outage.failures(),
            },
            'could not read the purge outbox; will try again with backoff',
          );
        },
      )
      .finally(() => {
        pass = undefined;
      });
  }

  return {
    async runNow(eventId) {
      const running$ = running.get(eventId);
      if (running$) return running$;
      const entry = (await pendingPurges.list()).find((e) => e.eventId === eventId);
      if (!entry) return true;
      return work(entry);
    },
    runDue,
    list: () => pendingPurges.list(),
    start() {
      if (timer) return;
      tick();
      timer = setInterval(tick, pollMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await pass;
      await Promise.allSettled([...running.values()]);
    },
  };
}
