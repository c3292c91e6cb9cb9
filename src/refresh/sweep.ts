/**
 * The token manager's background sweep: refreshes every installation expiring
 * within the window, page by page, as many at once as its pacer allows, skipping
 * stores another process is refreshing; paused (doubling) while the database fails.
 */
import { createOutageBackoff } from '../background/outage-backoff.js';
import { sleep } from '../client/ratelimit.js';
import { unref } from '../core/timers.js';
import { randomUUID } from '../crypto/primitives.js';
import { StoreAppError } from '../errors/index.js';
import type { Installation } from '../storage/types.js';
import { RefreshClientRejectedError, RefreshUnavailableError } from './errors.js';
import { createSweepPacer } from './pacer.js';
import type { Mode, RefreshCore, SweepResult, Trigger } from './refresh-types.js';

/** A swept store: 'ok' (nothing to learn), its refresh landed with `leftMs` to spare, or the endpoint failed. */
type SweepOutcome = 'ok' | 'endpoint_failed' | { leftMs: number };

/** The pid in a sweep's lease owner (for whoever reads the row). */
const PROCESS_ID = (globalThis as { process?: { pid?: number } }).process?.pid ?? 'worker';

/** Consecutive endpoint failures after which a sweep pass stops (the endpoint is down). */
const SWEEP_GIVE_UP_AFTER = 20;
/** A pass skips at most this many pages' worth of failed or leased stores, then ends. */
const SWEEP_SKIP_PAGES = 10;

/** What the sweep uses of its token manager besides the shared core. */
export interface SweepManager {
  /** Starts a store's refresh (single-flight); null: another process holds its lease. */
  start(storeId: string, trigger: Trigger, mode: Mode): Promise<Installation | null>;
  /** Refreshes a store the sweep claimed under `owner`'s lease; null: another process's tokens won. */
  startClaimed(inst: Installation, owner: string): Promise<Installation | null>;
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
    pending,
  } = core;
  const { start, startClaimed, fresh, endpoint } = manager;
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
      return outcomeOf(storeId, await start(storeId, { kind: 'window' }, 'sweep'), result, skip);
    } catch (err) {
      // One store failing (needs reinstall, endpoint down) must not stop the others.
      return failedOutcome(storeId, err, result, skip);
    }
  }

  /** What a refresh's promise settled with, as the pass counts it (see sweepOne). */
  function outcomeOf(
    storeId: string,
    inst: Installation | null,
    result: SweepResult,
    skip: Set<string>,
  ): SweepOutcome {
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
  }

  function failedOutcome(
    storeId: string,
    err: unknown,
    result: SweepResult,
    skip: Set<string>,
  ): SweepOutcome {
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

  /**
   * A pass on storage that claims due rows in batches (`claimDueForRefresh`):
   * one statement leases a page, so a store costs its token call and its
   * share of a grouped write, not a listing, a read and a lease write of its
   * own (issue 33: 100,000 due at once). Pages are claimed as workers need
   * them, about two rounds ahead: a claimed lease that waits long (a
   * Retry-After) is given back rather than refreshed late.
   */
  async function claimedPass(
    claim: NonNullable<typeof installations.claimDueForRefresh>,
    signal: AbortSignal | undefined,
  ): Promise<SweepResult> {
    const result: SweepResult = { checked: 0, refreshed: 0, failed: 0, leaseLost: 0 };
    const pacer = createSweepPacer({
      min: options.sweepConcurrency,
      max: options.sweepMaxConcurrency,
      behindMs: windowMs / 2,
    });
    let pushbackSeen = endpoint.pushback();
    let failingInARow = 0;
    const skip = new Set<string>();
    const maxSkip = options.sweepBatchSize * SWEEP_SKIP_PAGES;
    const queue: Array<{ inst: Installation; owner: string; at: number }> = [];
    let exhausted = false;
    let claiming: Promise<void> | undefined;
    const stopped = () =>
      failingInARow >= SWEEP_GIVE_UP_AFTER || skip.size >= maxSkip || !!signal?.aborted;

    const fill = (): Promise<void> => {
      claiming ??= (async () => {
        const pause = endpoint.pausedUntil() - now();
        if (pause > 0) await sleep(pause, signal);
        const owner = `${PROCESS_ID}:sweep:${randomUUID()}`;
        const size = Math.min(options.sweepBatchSize, Math.max(16, pacer.limit() * 2));
        const rows = await claim(new Date(platformNow() + windowMs), size, owner, options.leaseMs, [
          ...skip,
        ]);
        const at = now();
        for (const inst of rows) queue.push({ inst, owner, at });
        if (rows.length === 0) exhausted = true;
      })().finally(() => {
        claiming = undefined;
      });
      return claiming;
    };

    const take = async () => {
      for (;;) {
        // The next page is claimed while this one is worked.
        if (queue.length < pacer.limit() && !exhausted && !stopped()) {
          fill().catch(() => undefined);
        }
        const next = queue.shift();
        if (next || exhausted || stopped()) return next;
        await fill();
      }
    };

    const one = async (c: { inst: Installation; owner: string; at: number }) => {
      const { inst, owner } = c;
      const storeId = inst.storeId;
      const pause = endpoint.pausedUntil() - now();
      if (pause > 0) await sleep(pause, signal);
      // Held too long (a long Retry-After): give it back; a later claim takes it afresh.
      if (now() - c.at > options.leaseMs / 2 || signal?.aborted) {
        await installations.releaseRefreshLease(storeId, owner).catch(() => undefined);
        return 'ok' as const;
      }
      result.checked++;
      try {
        // Our last pair for it waits to be stored: the per-store path writes that first.
        if (pending.get(storeId)) {
          await installations.releaseRefreshLease(storeId, owner);
          return outcomeOf(
            storeId,
            await start(storeId, { kind: 'window' }, 'sweep'),
            result,
            skip,
          );
        }
        return outcomeOf(storeId, await startClaimed(inst, owner), result, skip);
      } catch (err) {
        return failedOutcome(storeId, err, result, skip);
      }
    };

    cache.prune((entry) => now() - entry.ticket.loadedAt >= options.cacheTtlMs);
    let active = 0;
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      const worker = async () => {
        // A worker retires between stores when the pacer lowered the limit.
        while (!failed && active <= pacer.limit()) {
          const next = await take();
          if (!next) return;
          const outcome = await one(next);
          failingInARow = outcome === 'endpoint_failed' ? failingInARow + 1 : 0;
          if (endpoint.pushback() !== pushbackSeen) {
            pushbackSeen = endpoint.pushback();
            pacer.pushback();
          } else if (outcome === 'endpoint_failed') {
            pacer.pushback();
          } else if (outcome !== 'ok') {
            pacer.landed(outcome.leftMs);
          }
          spawn();
        }
      };
      const spawn = () => {
        while (active < pacer.limit() && !failed && !stopped() && !(exhausted && !queue.length)) {
          active++;
          worker().then(
            () => {
              active--;
              if (active === 0) resolve();
            },
            (err: unknown) => {
              active--;
              failed = true;
              if (signal?.aborted) {
                if (active === 0) resolve();
                return;
              }
              reject(err);
            },
          );
        }
        if (active === 0) resolve();
      };
      spawn();
    }).finally(async () => {
      // Leases claimed but not worked (the pass stopped early) go back now, not in leaseMs.
      await claiming?.catch(() => undefined);
      const left = queue.splice(0);
      await Promise.all(
        left.map((c) =>
          installations.releaseRefreshLease(c.inst.storeId, c.owner).catch(() => undefined),
        ),
      );
    });
    if (failingInARow >= SWEEP_GIVE_UP_AFTER) {
      logger?.warn(
        { event: 'refresh.sweep_stopped', failed: result.failed },
        'The token endpoint kept failing; the sweep pass stopped and resumes at the next interval.',
      );
    }
    return result;
  }

  async function sweep(signal?: AbortSignal): Promise<SweepResult> {
    const claim = installations.claimDueForRefresh?.bind(installations);
    if (claim) return claimedPass(claim, signal);
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
    cache.prune((entry) => now() - entry.ticket.loadedAt >= options.cacheTtlMs);
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
        const started = now();
        sweeping = sweep(signal)
          .then((r) => {
            outage.record(undefined);
            // One line per pass that did something, however many stores it refreshed
            // (each refresh is a debug line): 100,000 due at once is one record.
            if (r.refreshed > 0 || r.failed > 0) {
              logger?.info(
                { event: 'refresh.sweep', ...r, durationMs: Math.max(0, now() - started) },
                `Token sweep pass: ${r.refreshed} refreshed, ${r.failed} failed.`,
              );
            }
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
