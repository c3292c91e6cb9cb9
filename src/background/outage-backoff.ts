/**
 * Background work (the token sweep, the purge outbox) against a database that
 * fails: instead of another full pass every tick, each pass that fails on
 * storage doubles the pause before the next one (with jitter, up to `maxMs`);
 * the first pass that works resets it. Requests are not affected: they get
 * their own deadline and answer 503.
 */
import { isStorageFailure } from '../errors/index.js';

export interface OutageBackoff {
  /** False while paused after storage failures. */
  ready(): boolean;
  /** A pass ended: with the error it failed with (any), or undefined when it worked. */
  record(err: unknown): void;
  /** Consecutive passes that failed on storage. */
  failures(): number;
}

export function createOutageBackoff(options: {
  baseMs: number;
  maxMs: number;
  now?: () => number;
}): OutageBackoff {
  const now = options.now ?? Date.now;
  let failures = 0;
  let pausedUntil = 0;
  return {
    ready: () => now() >= pausedUntil,
    record(err) {
      if (err === undefined || !isStorageFailure(err)) {
        failures = 0;
        pausedUntil = 0;
        return;
      }
      failures++;
      const cap = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(failures - 1, 20));
      pausedUntil = now() + cap / 2 + Math.random() * (cap / 2);
    },
    failures: () => failures,
  };
}
