/**
 * Per-store rate-limit pacing and concurrency cap.
 *
 * The platform counts requests per app and store in fixed 60-second windows and
 * reports X-RateLimit-Limit / -Remaining / -Reset on every response. Each store
 * gets its own gate, so a store that runs out of budget only delays its own
 * callers. The gate spreads the remaining budget over what is left of the window
 * (with one second's worth of burst), waits for the reset when the budget is
 * gone, and honours Retry-After after a 429.
 */
import { AbortedError, RateLimitedError } from './errors.js';

/** Keep this much of a window unused at its end, and wait this long past its reset, so
 * a small clock difference with the platform cannot land a request in the old window. */
const WINDOW_MARGIN_MS = 250;
/** The platform's window length (docs/platform-contract.md, "Rate limits"). */
const WINDOW_MS = 60_000;

export interface RateLimitSnapshot {
  limit: number | undefined;
  remaining: number | undefined;
  /** Local epoch ms at which the current window is expected to end. */
  windowEnd: number | undefined;
  inFlight: number;
  queued: number;
}

export interface StoreGate {
  /** Wait for a concurrency slot and a pacing slot; returns the release function. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  /** Feed the X-RateLimit-* headers of a response. */
  observe(headers: Headers): void;
  /** After a 429: nobody of this store sends before `ms` from now. */
  block(ms: number): void;
  snapshot(): RateLimitSnapshot;
}

export interface RateLimiter {
  forStore(storeId: string): StoreGate;
  delete(storeId: string): void;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 && !signal?.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbortedError());
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function headerInt(headers: Headers, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === null || !/^\s*\d+\s*$/.test(raw)) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}

export function createRateLimiter(options: {
  maxConcurrent: number;
  pacing: boolean;
  /**
   * A caller arriving while a 429 blocks the store for longer than this gets
   * RateLimitedError at once instead of waiting out the whole Retry-After.
   */
  maxBlockWaitMs?: number;
}): RateLimiter {
  const gates = new Map<string, StoreGate>();
  const maxBlockWaitMs = options.maxBlockWaitMs ?? Number.POSITIVE_INFINITY;
  return {
    forStore(storeId) {
      let gate = gates.get(storeId);
      if (!gate) {
        gate = createStoreGate(options.maxConcurrent, options.pacing, maxBlockWaitMs);
        gates.set(storeId, gate);
      }
      return gate;
    },
    delete(storeId) {
      gates.delete(storeId);
    },
  };
}

function createStoreGate(
  maxConcurrent: number,
  pacing: boolean,
  maxBlockWaitMs: number,
): StoreGate {
  let inFlight = 0;
  const waiters: Array<() => void> = [];

  let limit: number | undefined;
  let remaining: number | undefined;
  let windowEnd: number | undefined;
  /** Platform reset second of the window `windowEnd` describes. */
  let resetSecond: number | undefined;
  /** Platform clock minus local clock (ms) when the two visibly disagree; else 0. */
  let skewMs = 0;
  let nextSlot = 0;
  let blockedUntil = 0;

  function takeConcurrency(signal?: AbortSignal): Promise<void> {
    if (inFlight < maxConcurrent) {
      inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        inFlight++;
        resolve();
      };
      const onAbort = () => {
        const i = waiters.indexOf(grant);
        if (i >= 0) waiters.splice(i, 1);
        reject(new AbortedError());
      };
      if (signal?.aborted) {
        reject(new AbortedError());
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      waiters.push(grant);
    });
  }

  function releaseConcurrency() {
    inFlight--;
    const next = waiters.shift();
    if (next) next();
  }

  /**
   * Reserves a send time and returns how long to wait for it (`final`), or, when no
   * slot can be had yet (blocked, budget spent, window closing), how long to wait
   * before asking again (not `final`: nothing was reserved).
   */
  function reserve(now: number): { wait: number; final: boolean } {
    if (now < blockedUntil) return { wait: blockedUntil - now, final: false };
    if (!pacing || limit === undefined || remaining === undefined || windowEnd === undefined) {
      return { wait: 0, final: true };
    }
    if (now >= windowEnd + WINDOW_MARGIN_MS) {
      // The window ended without a response telling us about the next one: assume a fresh one.
      const windows = Math.floor((now - windowEnd) / WINDOW_MS) + 1;
      windowEnd += windows * WINDOW_MS;
      if (resetSecond !== undefined) resetSecond += windows * (WINDOW_MS / 1000);
      remaining = limit;
      nextSlot = 0;
    }
    const usableEnd = windowEnd - WINDOW_MARGIN_MS;
    if (remaining <= 0 || now >= usableEnd) {
      // Budget spent (or window about to close): wait for the reset, then start the next window.
      return { wait: windowEnd + WINDOW_MARGIN_MS - now, final: false };
    }
    // Earliest free slot; the budget left is spread evenly from there to the window's end.
    const slot = Math.max(nextSlot, now);
    if (slot >= usableEnd) return { wait: windowEnd + WINDOW_MARGIN_MS - now, final: false };
    const interval = (usableEnd - slot) / remaining;
    // Up to one second's worth of requests may go at once after a quiet spell (burst credit).
    const burst = Math.max(1, Math.floor(limit / 60));
    nextSlot = Math.max(nextSlot, now - burst * interval) + interval;
    remaining--;
    return { wait: slot - now, final: true };
  }

  return {
    async acquire(signal) {
      await takeConcurrency(signal);
      try {
        for (;;) {
          const now = Date.now();
          if (blockedUntil - now > maxBlockWaitMs) {
            throw new RateLimitedError(Math.ceil((blockedUntil - now) / 1000));
          }
          const { wait, final } = reserve(now);
          if (wait > 0) await sleep(wait, signal);
          if (final) break;
        }
      } catch (err) {
        releaseConcurrency();
        throw err;
      }
      let released = false;
      return function release() {
        if (released) return;
        released = true;
        releaseConcurrency();
      };
    },

    observe(headers) {
      const l = headerInt(headers, 'x-ratelimit-limit');
      const r = headerInt(headers, 'x-ratelimit-remaining');
      const s = headerInt(headers, 'x-ratelimit-reset');
      if (l === undefined || r === undefined || s === undefined || l <= 0) return;
      const now = Date.now();
      limit = l;
      if (resetSecond === undefined || s > resetSecond) {
        // First sight of this window. The reset is in platform time; when it is not
        // within one window of our clock the clocks differ, so estimate the offset.
        const delta = s * 1000 - now;
        if (resetSecond === undefined) {
          skewMs = delta >= -1000 && delta <= WINDOW_MS + 1000 ? 0 : delta - WINDOW_MS;
        } else if (skewMs !== 0) {
          // A new window just began on the platform: its end is about one window away.
          skewMs = delta - WINDOW_MS;
        }
        resetSecond = s;
        windowEnd = s * 1000 - skewMs;
        remaining = r;
        nextSlot = 0;
      } else if (s === resetSecond) {
        // Other processes may share the budget: the platform's count wins when lower.
        remaining = remaining === undefined ? r : Math.min(remaining, r);
      }
    },

    block(ms) {
      blockedUntil = Math.max(blockedUntil, Date.now() + ms);
    },

    snapshot() {
      return { limit, remaining, windowEnd, inFlight, queued: waiters.length };
    },
  };
}
