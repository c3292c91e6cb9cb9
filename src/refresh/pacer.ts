/**
 * How many refreshes a sweep pass runs at once (issue 24: a sweep that keeps
 * up). Pure: the sweep reports what happened, the pacer answers the limit.
 *
 * The signal is the tokens themselves: the sweep works due stores soonest
 * expiry first, so when a token it refreshes had less than `behindMs` left,
 * the pass is behind (many tokens due at once, or a slow token endpoint) and
 * more refreshes at once make up for the endpoint's latency. Like TCP's slow
 * start, the limit doubles once per round (as many behind landings as the
 * current limit), up to `max`. The token endpoint pushing back (a
 * Retry-After, a 5xx, a timeout) halves it, down to `min`, so a limited
 * endpoint is never pressed harder than it answers. A sweep that keeps up
 * stays at `min`.
 */
export interface SweepPacer {
  /** Refreshes to run at once now. */
  limit(): number;
  /** A refresh committed; `leftMs` is how long the token it replaced had left. */
  landed(leftMs: number): void;
  /** The token endpoint asked to slow down or failed. */
  pushback(): void;
}

/** Creates a pacer starting at `min`. `min` ≤ `max`, both ≥ 1 (the options guarantee it). */
export function createSweepPacer(input: {
  min: number;
  max: number;
  behindMs: number;
}): SweepPacer {
  const { min, max, behindMs } = input;
  let limit = min;
  let behindThisRound = 0;
  return {
    limit: () => limit,
    landed(leftMs) {
      if (leftMs >= behindMs || limit >= max) return;
      if (++behindThisRound < limit) return;
      limit = Math.min(max, limit * 2);
      behindThisRound = 0;
    },
    pushback() {
      limit = Math.max(min, Math.floor(limit / 2));
      behindThisRound = 0;
    },
  };
}
