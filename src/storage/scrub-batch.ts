/**
 * Scrubs (VACUUM, WAL checkpoint, OPTIMIZE TABLE) shared by the purges that
 * ask for one together. A scrub makes unreadable everything deleted before it
 * starts, whoever deleted it, so a burst of purges needs a few scrubs, not one
 * each: at most one runs and one waits; a purge committing while one runs
 * joins the waiting one, which covers the union of their tables.
 */
import { sleep } from '../core/timers.js';

export type Scrub = (tables: readonly string[]) => Promise<boolean>;

/**
 * Wraps `scrub` so concurrent callers share runs; each caller's promise
 * settles after a run that started after its call. A run starts `gatherMs`
 * after the first request of its batch: on SQLite every statement runs one
 * after the other, so without the pause no second purge could commit before
 * the run starts and a burst would still pay one checkpoint per purge.
 */
export function createScrubBatch(scrub: Scrub, gatherMs = 0): Scrub {
  let tail: Promise<unknown> = Promise.resolve();
  let waiting: { tables: Set<string>; promise: Promise<boolean> } | undefined;
  return function scrubBatched(tables) {
    if (waiting) {
      for (const name of tables) waiting.tables.add(name);
      return waiting.promise;
    }
    const batch = { tables: new Set(tables), promise: Promise.resolve(false) };
    waiting = batch;
    const gathered = gatherMs > 0 ? tail.then(() => sleep(gatherMs)) : tail;
    batch.promise = gathered.then(() => {
      // From here on, a new caller's deletes may be after this run's start: it waits for the next.
      if (waiting === batch) waiting = undefined;
      return scrub([...batch.tables]);
    });
    tail = batch.promise.catch(() => undefined);
    return batch.promise;
  };
}
