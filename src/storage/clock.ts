/**
 * The database's clock, the one clock every instance on a database shares:
 * leases, due times, outbox schedules and the purge horizon are decided in it,
 * never in an instance's `Date.now()` (an instance whose host clock runs
 * minutes ahead would take the others' leases and run their sweeps early).
 *
 * Reading it costs a round trip, so the kit reads it once in a while and
 * carries it forward on the process's monotonic clock (`performance.now()`,
 * which no wall-clock step moves): between two reads the estimate drifts by
 * the two clocks' rate difference (parts per million), and each read is
 * placed at the middle of its round trip.
 */
/** How long one reading of the database's clock is carried forward before the next. */
export const DATABASE_CLOCK_RESYNC_MS = 30_000;

export interface DatabaseClock {
  /** The database's time now (estimated: see the module comment). */
  now(): Promise<Date>;
  /**
   * The same without waiting, once a reading exists (undefined before): for
   * callers that must not yield before their work is queued.
   */
  peek(): Date | undefined;
}

/**
 * A clock over `read` (one round trip to the database). Without `read` (an
 * adapter that cannot tell its database's time) the instance's own clock.
 * The first call waits for a reading (and fails if the database does); later
 * ones re-read in the background once the reading is `resyncMs` old.
 */
export function createDatabaseClock(
  read: (() => Promise<Date>) | undefined,
  resyncMs = DATABASE_CLOCK_RESYNC_MS,
): DatabaseClock {
  if (!read) return { now: async () => new Date(), peek: () => new Date() };
  const readClock = read;
  let base: { at: number; mono: number } | undefined;
  let reading: Promise<void> | undefined;
  function sync(): Promise<void> {
    reading ??= (async () => {
      const sent = performance.now();
      const at = (await readClock()).getTime();
      const received = performance.now();
      if (Number.isFinite(at)) base = { at, mono: (sent + received) / 2 };
    })().finally(() => {
      reading = undefined;
    });
    return reading;
  }
  function estimate(): Date | undefined {
    const b = base;
    if (!b) return undefined;
    if (performance.now() - b.mono >= resyncMs) {
      // The old reading stays good meanwhile; a failed re-read is retried next time.
      sync().catch(() => undefined);
    }
    return new Date(Math.round(b.at + (performance.now() - b.mono)));
  }
  return {
    async now() {
      if (!base) await sync();
      return estimate() ?? new Date();
    },
    peek: estimate,
  };
}
