/**
 * The token manager's background sweep: refreshes every installation expiring
 * within the window, page by page, as many at once as its pacer allows, skipping
 * stores another process is refreshing; paused (doubling) while the database fails.
 */
import { createOutageBackoff } from '../background/outage-backoff.js';
import { sleep } from '../client/ratelimit.js';
import { unref } from '../core/timers.js';
import { StoreAppError } from '../errors/index.js';
import type { Installation } from '../storage/types.js';
import { RefreshClientRejectedError, RefreshUnavailableError } from './errors.js';
import { createSweepPacer } from './pacer.js';
import type { Mode, RefreshCore, SweepResult, Trigger } from './refresh-types.js';

/** A swept store: 'ok' (nothing to learn), its refresh landed with `leftMs` to spare, or the endpoint failed. */
type SweepOutcome = 'ok' | 'endpoint_failed' | { leftMs: number };

/** Consecutive endpoint failures after which a sweep pass stops (the endpoint is down). */
const SWEEP_GIVE_UP_AFTER = 20;
/** A pass skips at most this many pages' worth of failed or leased stores, then ends. */
const SWEEP_SKIP_PAGES = 10;

/** What the sweep uses of its token manager besides the shared core. */
export interface SweepManager {
  /** Starts a store's refresh (single-flight); null: another process holds its lease. */
  start(storeId: string, trigger: Trigger, mode: Mode): Promise<Installation | null>;
  /** Whether an installation's token is good beyond the window. */
  fresh(inst: Installation): boolean;
  /** What the token endpoint said about the pace (./lease-refresh.ts). */
  endpoint: { pausedUntil(): number; pushback(): number };
}

/** The sweep of one token manager: one pass, and the interval that runs passes. */
export function createSweep(core: RefreshCore, manager: SweepManager) {
  const {
    installations,
    options,
    logger,
    now,
    platformNow,
    windowMs,
    cache,
    inFlight,
    committedHere,
  } = core;
  const { start, fresh, endpoint } = manager;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<SweepResult> | undefined;
  let stopping: AbortController | undefined;

  /** One due store in a sweep pass; adds to `result`, and to `skip` when it stays due. */
  async function sweepOne(
    storeId: string,
    result: SweepResult,
    skip: Set<string>,
    signal: AbortSignal | undefined,
  ): Promise<SweepOutcome> {
    // Paced against the token endpoint: not before the Retry-After it gave any refresh.
    const pause = endpoint.pausedUntil() - now();
    if (pause > 0) await sleep(pause, signal);
    result.checked++;
    if (inFlight.has(storeId)) return 'ok'; // a request of this process is refreshing it
    try {
      const inst = await start(storeId, { kind: 'window' }, 'sweep');
      if (inst === null) {
        result.leaseLost++;
        skip.add(storeId);
        return 'ok';
      }
      // Count only refreshes this process made, not a winner's token it re-read.
      const replacedExpiry = committedHere.get(inst);
      if (replacedExpiry !== undefined) result.refreshed++;
      // A token issued for less than the window stays due: once per pass is enough.
      if (!fresh(inst)) skip.add(storeId);
      // How much of the window was left when its refresh landed (both in the platform's clock).
      return replacedExpiry === undefined ? 'ok' : { leftMs: replacedExpiry - platformNow() };
    } catch (err) {
      // One store failing (needs reinstall, endpoint down) must not stop the others.
      result.failed++;
      skip.add(storeId);
      if (!(err instanceof RefreshClientRejectedError)) {
        logger?.warn(
          { storeId, errorCode: err instanceof StoreAppError ? err.code : undefined },
          'Background refresh failed for a store.',
        );
      }
      return err instanceof RefreshUnavailableError || err instanceof RefreshClientRejectedError
        ? 'endpoint_failed'
        : 'ok';
    }
  }

  async function sweep(signal?: AbortSignal): Promise<SweepResult> {
    const result: SweepResult = { checked: 0, refreshed: 0, failed: 0, leaseLost: 0 };
    let failingInARow = 0;
    const pacer = createSweepPacer({
      min: options.sweepConcurrency,
      max: options.sweepMaxConcurrency,
      behindMs: windowMs / 2,
    });
    let pushbackSeen = endpoint.pushback();
    /**
     * Works one page of due stores, `pacer.limit` at a time; the limit moves
     * as refreshes land (see createSweepPacer), so workers are added or
     * retire between stores, never in the middle of one.
     */
    const runPage = (ids: string[], one: (id: string) => Promise<SweepOutcome>) =>
      new Promise<void>((resolve, reject) => {
        let next = 0;
        let active = 0;
        let failed = false;
        const more = () =>
          !failed && next < ids.length && failingInARow < SWEEP_GIVE_UP_AFTER && !signal?.aborted;
        const launch = () => {
          while (active < pacer.limit() && more()) {
            const id = ids[next++] as string;
            active++;
            one(id).then(
              (outcome) => {
                active--;
                if (endpoint.pushback() !== pushbackSeen) {
                  pushbackSeen = endpoint.pushback();
                  pacer.pushback();
                } else if (outcome === 'endpoint_failed') {
                  pacer.pushback();
                } else if (outcome !== 'ok') {
                  pacer.landed(outcome.leftMs);
                }
                launch();
              },
              (err: unknown) => {
                active--;
                // Only the pass's own stop signal ends a wait here.
                if (signal?.aborted) {
                  launch();
                  return;
                }
                failed = true;
                reject(err);
              },
            );
          }
          if (active === 0) resolve();
        };
        launch();
      });
    // Entries past their age answer no request; without this they would wait for the bound.
    // (Due ones stay: this pass replaces them with their refreshed copy.)
    cache.prune((entry) => now() - entry.loadedAt >= options.cacheTtlMs);
    // Stores that stay due after this pass tried them (failed, or another process holds
    // their lease): not tried again until the next pass. Bounded: the pass ends first.
    const skip = new Set<string>();
    const maxSkip = options.sweepBatchSize * SWEEP_SKIP_PAGES;
    while (skip.size < maxSkip && failingInARow < SWEEP_GIVE_UP_AFTER && !signal?.aborted) {
      // Read now, not once per pass: what another instance refreshed meanwhile is gone.
      const ids = await installations.listExpiringBefore(
        new Date(platformNow() + windowMs),
        options.sweepBatchSize + skip.size,
      );
      const due = ids.filter((id) => !skip.has(id) && !inFlight.has(id));
      if (due.length === 0) break;
      // Instances sharing a database read the same page: each works it in its own order,
      // so they mostly meet at stores already done rather than race for the same lease.
      shuffle(due);
      await runPage(due, (id) =>
        sweepOne(id, result, skip, signal).then((outcome) => {
          failingInARow = outcome === 'endpoint_failed' ? failingInARow + 1 : 0;
          return outcome;
        }),
      );
    }
    if (failingInARow >= SWEEP_GIVE_UP_AFTER) {
      logger?.warn(
        { event: 'refresh.sweep_stopped', failed: result.failed },
        'The token endpoint kept failing; the sweep pass stopped and resumes at the next interval.',
      );
    }
    return result;
  }

  return {
    sweep,
    startSweep() {
      if (sweepTimer || options.sweepIntervalMs === 0) return;
      stopping = new AbortController();
      const { signal } = stopping;
      // A failing database pauses the sweep (doubling) instead of a pass every tick.
      const outage = createOutageBackoff({
        baseMs: options.sweepIntervalMs,
        maxMs: Math.max(options.sweepIntervalMs, 10 * 60_000),
      });
      sweepTimer = setInterval(() => {
        if (sweeping || !outage.ready()) return;
        sweeping = sweep(signal)
          .then((r) => {
            outage.record(undefined);
            return r;
          })
          .catch((err) => {
            outage.record(err);
            logger?.error(
              { errorCode: err instanceof StoreAppError ? err.code : undefined },
              'Background token sweep failed; will try again.',
            );
            return { checked: 0, refreshed: 0, failed: 1, leaseLost: 0 };
          })
          .finally(() => {
            sweeping = undefined;
          });
      }, options.sweepIntervalMs);
      // The sweep must never keep a process alive on its own.
      unref(sweepTimer);
    },
    async stopSweep() {
      if (sweepTimer) clearInterval(sweepTimer);
      sweepTimer = undefined;
      // A pass waiting out a long Retry-After ends now; refreshes under way finish.
      stopping?.abort();
      await sweeping;
    },
  };
}

/** Fisher–Yates, in place. */
function shuffle<T>(xs: T[]): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
  }
}
