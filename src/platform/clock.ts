/**
 * The platform's notion of "now". Tests move it forward with
 * `platform.advanceClock(seconds)` so token and code expiry need no waiting.
 */
export interface Clock {
  now(): Date;
  /** Unix seconds. */
  nowSeconds(): number;
}

export interface AdjustableClock extends Clock {
  advance(seconds: number): void;
}

export function createClock(): AdjustableClock {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    nowSeconds: () => Math.floor((Date.now() + offsetMs) / 1000),
    advance(seconds: number) {
      offsetMs += seconds * 1000;
    },
  };
}
