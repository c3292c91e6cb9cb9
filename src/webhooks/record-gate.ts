/**
 * The admission gate of delivery records (issue 22 §5). A burst of deliveries
 * would otherwise all start their record transaction at once and queue for a
 * pool connection inside it, where the wait counts against
 * `storage.timeoutMs`: the tail of the queue fails with 503 and waits for the
 * platform's next retry tier (30 s, 120 s). Admitting at most a pool's worth
 * of record transactions at once, in arrival order, moves that wait out of
 * the storage deadline, which then starts when a record is admitted.
 *
 * The wait is bounded by `ackTimeoutMs - storage.timeoutMs`, so that a record
 * admitted at the last moment still has its whole storage deadline before the
 * receiver's acknowledgement deadline: a 202 is never sent for a delivery
 * whose record was still queued. Past the bound the delivery fails as a
 * storage timeout (503 with Retry-After); nothing was written.
 */
import { StorageError } from '../errors/index.js';

/** The pseudo driver code in the message of a delivery refused by the gate. */
export const RECORD_QUEUE_WAIT = 'RECORD_QUEUE_WAIT';

export interface RecordGate {
  /**
   * `work()` once admitted (FIFO), or a `timeout` StorageError past the wait
   * bound. With `bounded`, also a `timeout` StorageError when `work()` has not
   * settled `budgetMs` after the call (its slot stays taken until it does).
   */
  run<T>(work: () => Promise<T>, bounded?: boolean): Promise<T>;
  /** Records running and waiting now (tests, telemetry). */
  readonly load: { running: number; waiting: number };
}

/**
 * A FIFO gate of `concurrency` slots whose waiters give up after
 * `maxWaitMs` (0: never wait, refuse at once when every slot is taken).
 * `budgetMs` (wait included) bounds the runs asked for as `bounded`.
 */
export function createRecordGate(options: {
  concurrency: number;
  maxWaitMs: number;
  budgetMs?: number;
}): RecordGate {
  const { concurrency, maxWaitMs } = options;
  const budgetMs = options.budgetMs ?? Number.POSITIVE_INFINITY;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError('record gate concurrency must be a positive integer');
  }
  // A Set keeps insertion order (FIFO) and deletes a waiter that gave up in O(1).
  const waiting = new Set<{ admit: () => void }>();
  let running = 0;

  function release(): void {
    running--;
    for (const w of waiting) {
      waiting.delete(w);
      running++;
      w.admit();
      return;
    }
  }

  function refused(): StorageError {
    return new StorageError(
      `recording a webhook delivery failed (${RECORD_QUEUE_WAIT}): no turn for a database ` +
        `connection within ${maxWaitMs} ms; answered 503 so the platform retries. ` +
        'If this happens outside bursts, raise storage.pool.max or webhooks.ackTimeoutMs.',
      { reason: 'timeout' },
    );
  }

  function admitted(): Promise<void> {
    if (running < concurrency && waiting.size === 0) {
      running++;
      return Promise.resolve();
    }
    if (maxWaitMs <= 0) return Promise.reject(refused());
    return new Promise<void>((resolve, reject) => {
      const w = {
        admit: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        waiting.delete(w);
        reject(refused());
      }, maxWaitMs);
      waiting.add(w);
    });
  }

  function overBudget(): StorageError {
    return new StorageError(
      `recording a webhook delivery failed (${RECORD_QUEUE_WAIT}): not recorded within ` +
        `${budgetMs} ms; answered 503 before the acknowledgement deadline so the platform retries.`,
      { reason: 'timeout' },
    );
  }

  return {
    async run(work, bounded = false) {
      const arrived = performance.now();
      await admitted();
      const done = work().finally(release);
      if (!bounded || !Number.isFinite(budgetMs)) return done;
      // The record's storage waits are each bounded, their sum is not: past the
      // budget the receiver would answer 202 for a record not yet committed.
      // Answer 503 instead; a late commit only makes the retry a duplicate.
      const left = budgetMs - (performance.now() - arrived);
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(overBudget()), Math.max(0, left));
      });
      done.catch(() => {});
      try {
        return await Promise.race([done, expired]);
      } finally {
        clearTimeout(timer);
      }
    },
    get load() {
      return { running, waiting: waiting.size };
    },
  };
}

/**
 * The gate the kit puts in front of delivery records on a pooled database:
 * a pool's worth of records at once. SQLite needs none: its deliveries share
 * one COMMIT (group commit) and a gate would shrink the groups.
 */
export function recordGateFor(limits: {
  poolMax: number;
  storageTimeoutMs: number;
  ackTimeoutMs: number;
}): RecordGate {
  return createRecordGate({
    // The whole pool: purges wait for a pause in the arrivals (outbox), so
    // during a burst the connections are the records'; a record that meets a
    // purge's connection waits for one purge transaction, not for the burst.
    concurrency: Math.max(1, limits.poolMax),
    maxWaitMs: Math.max(0, limits.ackTimeoutMs - limits.storageTimeoutMs - ACK_MARGIN_MS),
    budgetMs: Math.max(1, limits.ackTimeoutMs - ACK_MARGIN_MS),
  });
}

/**
 * Slack between the receiver starting its ack clock and the processor asking
 * the gate (verification done, the event handed over): the gate gives up this
 * much earlier so a record admitted last still fits before the 202.
 */
export const ACK_MARGIN_MS = 50;
