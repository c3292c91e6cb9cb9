/**
 * The purge outbox worker. An `app.uninstalled` event's purge is recorded
 * (storage.pendingPurges) in the same transaction as the event's dedupe row,
 * so once the platform has its acknowledgement the purge cannot be lost: it
 * is tried at once, retried with backoff until it succeeds, and resumed when
 * the app starts again after a crash.
 *
 * Every instance on the database works the same outbox. An entry is worked
 * under a lease (storage.pendingPurges.lease), so two instances never work
 * one entry at once; a lease left by a crashed instance ends after `leaseMs`.
 * Purge transactions run a few at a time per process (`concurrency`), so a
 * burst of uninstalls queues here and leaves the connection pool to the
 * deliveries still arriving. A purge frees its slot once its transaction
 * committed, before its scrub: the scrub (VACUUM, WAL checkpoint, OPTIMIZE)
 * is shared by every purge that committed meanwhile (storage's scrub batch).
 * During a burst, deliveries are acknowledged once recorded and the outbox
 * drains the entries in batches (`batchSize` leased in one statement).
 *
 * Once a purge has committed, its entry stays as a 'sweep' due `sweepDelayMs`
 * later (the purge horizon): a second pass deletes what requests still in
 * flight at the commit (or served from another instance's installation cache)
 * wrote for the store since, unless the store was installed again meanwhile.
 */

import { createOutageBackoff } from '../background/outage-backoff.js';
import type { MinimalLogger } from '../core/logger.js';
import { sleep, unref } from '../core/timers.js';
import { randomUUID } from '../crypto/primitives.js';
import { StoreAppError } from '../errors/index.js';
import type { PendingPurge, PendingPurgeRepository } from '../storage/types.js';
import type { PurgeFunction } from './index.js';

export interface PurgeOutbox {
  /**
   * Work the pending purge of `eventId` now (no-op when it is already done;
   * waits while another instance holds its lease). Resolves true when the
   * purge is done, or queued in this process behind a burst (every slot
   * busy: it runs as soon as one frees, and the outbox keeps it across a
   * crash); false when it failed and was rescheduled.
   */
  runNow(eventId: string): Promise<boolean>;
  /** Lease and work every due entry once (one batch). Resolves with how many completed. */
  runDue(): Promise<number>;
  /** Every purge not yet done, oldest first (`kit.pendingPurges()`, `store-app purges`). */
  list(): Promise<PendingPurge[]>;
  /** Resume pending purges now and keep working them (an unref'd timer). Idempotent. */
  start(): void;
  /**
   * Stop the timer and wait for running attempts; leased entries still waiting
   * for a slot are not started (their lease ends and the outbox of another
   * instance, or of the next start, works them).
   */
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
  /** How often the timer looks for due entries (others' too). @default 2000 */
  pollMs?: number;
  /** Entries leased per pass. @default 50 */
  batchSize?: number;
  /**
   * Purge (and sweep) transactions this process runs at once. A purge holds
   * its slot until its transaction committed, not through its scrub, so a
   * scrub is shared by however many committed meanwhile; keep this below the
   * pool size so deliveries still find connections during a burst.
   * @default 4
   */
  concurrency?: number;
  /**
   * How long a lease keeps other instances off an entry; renewed while the
   * purge runs, so it only bounds how long a crashed instance's entry waits.
   * @default 5000
   */
  leaseMs?: number;
  /** The purge horizon: the sweep runs this long after the purge committed. 0: no sweep. @default 60000 */
  sweepDelayMs?: number;
  /**
   * The database's clock (`storage.now`): lease ends, retry times and the
   * sweep's due time are set in it, the one clock every instance shares.
   * @default the instance's clock
   */
  now?: () => Promise<Date>;
  /** How often `runNow` looks again while another instance holds the lease. @default 100 */
  leaseWaitPollMs?: number;
  /**
   * During a burst (a delivery queued less than this long ago), purges wait
   * for the deliveries to pause: recording them (and acknowledging) comes
   * first, purges and their scrubs (I/O-heavy on MariaDB) after. Purges wait
   * at most `10 * burstQuietMs` for a pause.
   * @default 200
   */
  burstQuietMs?: number;
}

const errorCode = (err: unknown): string =>
  err instanceof StoreAppError ? err.code : err instanceof Error ? err.name : 'UNKNOWN';

/**
 * A counting semaphore: at most `size` holders at once, the others queue in
 * order. `acquire` resolves with the holder's release function (idempotent).
 */
function createSlots(size: number) {
  let free = size;
  const queue: Array<() => void> = [];
  const waiters = new Set<() => void>();
  function releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = queue.shift();
      if (next) next();
      else free++;
      for (const w of waiters) w();
      waiters.clear();
    };
  }
  return {
    /** A slot now, or undefined when every slot is taken. */
    tryAcquire(): (() => void) | undefined {
      if (free === 0) return undefined;
      free--;
      return releaser();
    },
    acquire(): Promise<() => void> {
      if (free > 0) {
        free--;
        return Promise.resolve(releaser());
      }
      return new Promise((resolve) => queue.push(() => resolve(releaser())));
    },
    /** How many wait for a slot. */
    waiting: () => queue.length,
    /** Resolves at the next release. */
    released: () => new Promise<void>((resolve) => waiters.add(resolve)),
  };
}

export function createPurgeOutbox(deps: PurgeOutboxDeps): PurgeOutbox {
  const { pendingPurges, purge, logger } = deps;
  const baseDelayMs = deps.baseDelayMs ?? 1000;
  const maxDelayMs = deps.maxDelayMs ?? 300_000;
  const pollMs = deps.pollMs ?? 2000;
  const batchSize = deps.batchSize ?? 50;
  const leaseMs = deps.leaseMs ?? 5000;
  const sweepDelayMs = deps.sweepDelayMs ?? 60_000;
  const leaseWaitPollMs = deps.leaseWaitPollMs ?? 100;
  const dbNow = deps.now ?? (async () => new Date());
  const inDbClock = async (ms: number) => new Date((await dbNow()).getTime() + ms);
  const slots = createSlots(deps.concurrency ?? 4);
  const burstQuietMs = deps.burstQuietMs ?? 200;
  let lastQueued = Number.NEGATIVE_INFINITY;
  let burstStarted = Number.NEGATIVE_INFINITY;
  const instance = randomUUID();
  let leases = 0;
  const running = new Map<string, Promise<boolean>>();
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<unknown> | undefined;
  // A database that fails pauses the passes (doubling) instead of a full pass every poll.
  const outage = createOutageBackoff({ baseMs: pollMs, maxMs: Math.max(pollMs, 60_000) });
  let closed = false;

  type Leased = PendingPurge & { owner: string };

  async function lease(limit: number, eventId?: string, owner?: string): Promise<Leased[]> {
    const by = owner ?? `${instance}:${++leases}`;
    const taken = await pendingPurges.lease({
      owner: by,
      until: await inDbClock(leaseMs),
      limit,
      ...(eventId === undefined ? {} : { eventId }),
    });
    return taken.map((entry) => ({ ...entry, owner: by }));
  }

  /** Keeps renewing `entry`'s lease until the returned stop function is called. */
  function keepLease(entry: Leased): () => void {
    const renew = setInterval(
      () => {
        lease(1, entry.eventId, entry.owner).catch(() => {
          // The database is away: the purge will fail too, or the lease ends and another instance retries.
        });
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    unref(renew);
    return () => clearInterval(renew);
  }

  async function attempt(entry: Leased, slot?: () => void): Promise<boolean> {
    // Renewed from the lease on, while it waits for a slot too.
    const stop = keepLease(entry);
    const release = slot ?? (await slots.acquire());
    try {
      // Closing (a shutdown): a purge that has not started is left to the outbox;
      // its lease ends within leaseMs and another instance (or the next start) works it.
      if (closed && slot === undefined) return false;
      return await attemptLeased(entry, release);
    } finally {
      release();
      stop();
    }
  }

  async function attemptLeased(entry: PendingPurge, committed: () => void): Promise<boolean> {
    const ids = { storeId: entry.storeId, eventId: entry.eventId };
    const sweep = entry.kind === 'sweep';
    try {
      const result = await purge(entry.storeId, {
        ifInstalledBefore: entry.eventAt,
        ...(sweep ? { sweep } : {}),
        onCommitted: committed,
        // The sweep is scheduled in the purge's own transaction: a crash
        // between the commit and `complete` below cannot lose it.
        outbox: { eventId: entry.eventId, sweepAfterMs: sweep ? 0 : sweepDelayMs },
      });
      // The sweep is due a horizon after the commit, not after the event.
      const sweepAt =
        !sweep && result.purged && sweepDelayMs > 0 ? await inDbClock(sweepDelayMs) : undefined;
      await pendingPurges.complete(entry.eventId, sweepAt);
      if (sweep) {
        const deleted = Object.values(result.counts).reduce((a, b) => a + b, 0);
        if (deleted > 0) {
          logger?.warn(
            { event: 'purge.sweep_deleted', ...ids, counts: result.counts },
            'rows written for the store after its purge (requests in flight, or another instance still trusting its cache) deleted by the sweep',
          );
        }
      } else {
        logger?.info(
          { event: 'purge.completed', ...ids, purged: result.purged, attempts: entry.attempts + 1 },
          'pending purge done',
        );
      }
      return true;
    } catch (err) {
      const attempts = entry.attempts + 1;
      const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempts - 1));
      // Full jitter on the upper half: instances retrying together spread out.
      const delay = Math.round(cap / 2 + Math.random() * (cap / 2));
      const code = errorCode(err);
      let nextAttemptAt: Date | undefined;
      try {
        nextAttemptAt = await inDbClock(delay);
        await pendingPurges.recordFailure(entry.eventId, nextAttemptAt, code);
      } catch {
        // The database is down: the row is still there and its lease ends; a later pass retries.
      }
      logger?.warn(
        {
          event: sweep ? 'purge.sweep_retry_scheduled' : 'purge.retry_scheduled',
          ...ids,
          attempts,
          errorCode: code,
          nextAttemptAt,
        },
        'pending purge failed; retrying with backoff',
      );
      return false;
    }
  }

  /** A leased entry, single-flight per event in this process; `slot`: one already held. */
  function work(entry: Leased, slot?: () => void): Promise<boolean> {
    let p = running.get(entry.eventId);
    if (p) {
      slot?.();
      return p;
    }
    p = attempt(entry, slot).finally(() => running.delete(entry.eventId));
    running.set(entry.eventId, p);
    return p;
  }

  /**
   * Leases one batch of due entries and starts them; resolves with the batch
   * (`leased`) once fewer than a batch wait for a slot, and with every
   * attempt's outcome (`done`).
   */
  async function leaseBatch(): Promise<{ leased: number; done: Promise<boolean[]> }> {
    const leased = await lease(batchSize);
    const done = Promise.all(leased.map((entry) => work(entry)));
    // Back-pressure: leases are renewed while they wait, so lease the next
    // batch only when this one has mostly reached its slots.
    while (slots.waiting() >= batchSize && !closed) await slots.released();
    return { leased: leased.length, done };
  }

  async function runDue(): Promise<number> {
    const { done } = await leaseBatch();
    return (await done).filter(Boolean).length;
  }

  function runNow(eventId: string): Promise<boolean> {
    const mine = running.get(eventId);
    if (mine) return mine;
    // Taken now, not after the lease's round trip: deliveries recorded
    // together (one group commit) must not all see the same free slot.
    const now = performance.now();
    const slot = now - lastQueued < burstQuietMs ? undefined : slots.tryAcquire();
    if (slot) return runNowWaiting(eventId, slot);
    if (now - lastQueued >= burstQuietMs) burstStarted = now;
    lastQueued = now;
    // A burst: every slot is taken. The purge is recorded (it committed with
    // the delivery), so the delivery is acknowledged now and the outbox's
    // batches drain it; making the platform wait would only time its requests
    // out and bring their retries on top of the burst.
    kick();
    logger?.info(
      { event: 'purge.queued', eventId },
      'uninstall recorded; purge queued behind a burst',
    );
    return Promise.resolve(true);
  }

  async function runNowWaiting(eventId: string, held: () => void): Promise<boolean> {
    // Another instance holding the lease is working the purge, or died and its
    // lease ends within leaseMs; past this bound the platform's retry comes back.
    const deadline = performance.now() + Math.max(30_000, 3 * leaseMs);
    let slot: (() => void) | undefined = held;
    try {
      for (;;) {
        slot ??= await slots.acquire();
        const [entry] = running.has(eventId) ? [] : await lease(1, eventId);
        if (entry) {
          const p = work(entry, slot);
          slot = undefined; // the attempt releases it
          return await p;
        }
        const local = running.get(eventId);
        if (local) {
          // This process's batch has it, and may be waiting for this very slot.
          slot();
          slot = undefined;
          return await local;
        }
        const current = await pendingPurges.get(eventId);
        // Gone, or a sweep: the purge itself is done (here or elsewhere).
        if (!current || current.kind === 'sweep') return true;
        if (closed || performance.now() >= deadline) return false;
        // Not holding a slot while another instance works the entry.
        slot();
        slot = undefined;
        await sleep(leaseWaitPollMs);
      }
    } finally {
      slot?.();
    }
  }

  let again = false;
  let kicked: NodeJS.Timeout | undefined;
  /** How long the next pass waits for a burst's deliveries to pause (bounded). */
  function quietDelay(): number {
    const now = performance.now();
    const pause = lastQueued + burstQuietMs - now;
    const cap = burstStarted + 10 * burstQuietMs - now;
    return Math.max(0, Math.min(pause, cap));
  }
  /** A burst: drain once deliveries pause, and again after the pass running now. */
  function kick(): void {
    if (closed) return;
    if (pass) {
      again = true;
    } else if (!kicked) {
      schedulePass();
    }
  }
  function schedulePass(): void {
    const delay = quietDelay();
    kicked = setTimeout(() => {
      kicked = undefined;
      if (quietDelay() > 0) schedulePass();
      else tick();
    }, delay);
    unref(kicked);
  }

  function tick(): void {
    if (pass || !outage.ready()) return;
    if (quietDelay() > 0) {
      if (!kicked) schedulePass();
      return;
    }
    again = false;
    pass = leaseBatch()
      .then(
        ({ leased, done }) => {
          outage.record(undefined);
          // Failures are rescheduled (and logged) by each attempt.
          done.catch(() => undefined);
          // A full batch: more are due (a burst); go on without waiting a poll.
          if ((leased === batchSize || again) && !closed && !kicked) schedulePass();
        },
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
    runNow,
    runDue,
    list: () => pendingPurges.list(),
    start() {
      if (timer) return;
      closed = false;
      tick();
      timer = setInterval(tick, pollMs);
      unref(timer);
    },
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      if (kicked) clearTimeout(kicked);
      timer = undefined;
      await pass;
      await Promise.allSettled([...running.values()]);
    },
  };
}
