/**
 * Per app-and-store rate limiting (contract): fixed 60-second windows aligned
 * to the platform clock (shorter with `rateLimitWindowSeconds`, for benches),
 * plus a cap on requests in flight.
 */
import type { Clock } from '../clock.js';
import type { RateLimit } from '../options.js';

/** What `X-RateLimit-Limit` says for an unlimited (Elite) app: the largest 32-bit integer. */
export const UNLIMITED_HEADER_VALUE = 2147483647;
export const WINDOW_SECONDS = 60;

interface Bucket {
  windowStart: number;
  count: number;
  inFlight: number;
}

export type Admission =
  | { ok: true; limit: number; remaining: number; reset: number; release: () => void }
  | { ok: false; limit: number; remaining: number; reset: number; retryAfter: number };

export interface RateLimiter {
  /** Counts one request against the bucket; `release` must be called when it ends. */
  admit(key: string, limit: RateLimit): Admission;
  /** The bucket's state without counting (for responses refused before admission). */
  peek(
    key: string | undefined,
    limit: RateLimit,
  ): { limit: number; remaining: number; reset: number };
  reset(): void;
}

export function createRateLimiter(clock: Clock, windowSeconds = WINDOW_SECONDS): RateLimiter {
  const buckets = new Map<string, Bucket>();

  function bucketFor(key: string, windowStart: number): Bucket {
    let b = buckets.get(key);
    if (!b) {
      b = { windowStart, count: 0, inFlight: 0 };
      buckets.set(key, b);
    } else if (b.windowStart !== windowStart) {
      b.windowStart = windowStart;
      b.count = 0;
    }
    return b;
  }

  function window(): { start: number; reset: number } {
    const now = clock.nowSeconds();
    const start = now - (now % windowSeconds);
    return { start, reset: start + windowSeconds };
  }

  return {
    admit(key, limit) {
      const { start, reset } = window();
      const b = bucketFor(key, start);
      const headerLimit = limit.perMinute ?? UNLIMITED_HEADER_VALUE;
      const remainingOf = () =>
        limit.perMinute === null ? UNLIMITED_HEADER_VALUE : Math.max(0, limit.perMinute - b.count);
      if (limit.perMinute !== null && b.count >= limit.perMinute) {
        return {
          ok: false,
          limit: headerLimit,
          remaining: 0,
          reset,
          retryAfter: Math.max(1, reset - clock.nowSeconds()),
        };
      }
      if (b.inFlight >= limit.concurrent) {
        return { ok: false, limit: headerLimit, remaining: remainingOf(), reset, retryAfter: 1 };
      }
      b.count++;
      b.inFlight++;
      let released = false;
      return {
        ok: true,
        limit: headerLimit,
        remaining: remainingOf(),
        reset,
        release() {
          if (!released) {
            released = true;
            b.inFlight--;
          }
        },
      };
    },
    peek(key, limit) {
      const { start, reset } = window();
      const b = key === undefined ? undefined : buckets.get(key);
      const count = b && b.windowStart === start ? b.count : 0;
      return {
        limit: limit.perMinute ?? UNLIMITED_HEADER_VALUE,
        remaining:
          limit.perMinute === null ? UNLIMITED_HEADER_VALUE : Math.max(0, limit.perMinute - count),
        reset,
      };
    },
    reset() {
      buckets.clear();
    },
  };
}
