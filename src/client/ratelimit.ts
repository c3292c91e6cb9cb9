/**
 * Per-store rate-limit pacing and concurrency cap (the model, with a diagram of
 * one window, is in docs/client.md, "Pacing").
 *
 * The platform counts requests per app and store in fixed windows and reports
 * X-RateLimit-Limit / -Remaining / -Reset on every response. Reset is a time on
 * the platform's clock, so it is read against the same response's `Date` header
 * (the offset between the two clocks is bounded from every response), never
 * against our own clock: a platform clock that jumps a day ahead moves the
 * window, not our wait.
 *
 * Nothing is reserved ahead of time: a queued caller is let go only when, at
 * that moment, the store's budget allows it (`decide`), so a 429 or a lower
 * count seen meanwhile applies to every caller still waiting.
 *
 * - No window known yet (start, or the last one is over): one probe request at
 *   a time until a response tells us about the window.
 * - Window known: what is left (`remaining` minus our requests in flight) is
 *   spread evenly up to the window's end, with one second's worth of burst.
 *   Several processes on one store each do the same with the count the platform
 *   reports; see docs/client.md for why that converges without overdrawing.
 * - Headers absent or implausible: no pacing, only the concurrency cap and
 *   Retry-After after a 429 (reactive).
 * - Never a wait longer than one window.
 */
import { createLru } from '../cache/lru.js';
import { AbortedError, RateLimitedError } from './errors.js';
import { createClockOffset, type PlatformClock, responseDate } from './platform-clock.js';

/** The platform's window length (docs/platform-contract.md, "Rate limits"); no wait is longer. */
export const WINDOW_MS = 60_000;
/** Stop spreading this long before the earliest possible end of a window. */
const END_MARGIN_MS = 100;
/** Start the next window this long after the latest possible end of the current one. */
const START_MARGIN_MS = 100;
/**
 * Added to our measured share of the store's budget. Any split is a fixed point of
 * "share = what we got"; the slack makes the even split the only one (a process
 * that got little asks for relatively more), at the price of asking for up to
 * n × slack more than the whole budget together.
 */
const SHARE_SLACK = 0.1;
/** A probe that has not answered in this long no longer holds the others back. */
const PROBE_PATIENCE_MS = 1_000;

export interface RateLimitSnapshot {
  /** 'probe' (no window known), 'paced' or 'reactive' (headers absent or implausible). */
  mode: 'probe' | 'paced' | 'reactive';
  limit: number | undefined;
  /** Lowest X-RateLimit-Remaining seen in the current window. */
  remaining: number | undefined;
  /** Local epoch ms by which the current window has ended at the latest. */
  windowEnd: number | undefined;
  inFlight: number;
  queued: number;
  /** Local epoch ms until which a 429 holds every caller of the store. */
  blockedUntil: number;
}

/** A granted send: call `release` once the exchange is over, with the response's headers. */
export interface Slot {
  /** Local time the request was let go. */
  readonly sentAt: number;
  release(headers?: Headers): void;
}

export interface StoreGate {
  /**
   * Waits for a concurrency slot and a pacing slot. Rejects with RateLimitedError
   * at once when the store is held (429) or paced for longer than `maxWaitMs`, and
   * with AbortedError when `signal` fires.
   */
  acquire(signal?: AbortSignal, maxWaitMs?: number): Promise<Slot>;
  /** After a 429: nobody of this store sends for `ms` (at most one window). */
  block(ms: number): void;
  snapshot(): RateLimitSnapshot;
  /** Nothing in flight, queued or held by a 429: forgetting the gate loses only pacing hints. */
  idle(): boolean;
}

export interface RateLimiter {
  forStore(storeId: string): StoreGate;
  delete(storeId: string): void;
  /** Gates held now (idle ones up to the bound, plus busy ones). */
  readonly size: number;
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

export { responseDate };

/**
 * Milliseconds until the platform's window resets, read in the platform's own
 * clock (Reset against the response's Date); undefined when the headers are
 * missing or say something no window of the contract can mean.
 */
export function resetInMs(headers: Headers): number | undefined {
  const reset = headerInt(headers, 'x-ratelimit-reset');
  if (reset === undefined) return undefined;
  const date = responseDate(headers) ?? Date.now();
  const ms = reset * 1000 - date;
  return ms >= 0 && ms <= WINDOW_MS + 1000 ? ms : undefined;
}

/** Idle gates kept when the caller gives no bound (the client option's default). */
export const DEFAULT_MAX_GATES = 1_000;

export function createRateLimiter(options: {
  maxConcurrent: number;
  pacing: boolean;
  /**
   * Idle gates kept at most (least recently used dropped first). A busy gate
   * (requests in flight or queued, or a 429 pending) is never dropped, so the
   * bound is exceeded only by stores with calls under way.
   * @default DEFAULT_MAX_GATES
   */
  maxGates?: number;
  /** The kit's platform clock, fed by every response's `Date` too. @default undefined */
  platformClock?: PlatformClock | undefined;
}): RateLimiter {
  const gates = createLru<string, StoreGate>({
    max: options.maxGates ?? DEFAULT_MAX_GATES,
    canEvict: (gate) => gate.idle(),
  });
  return {
    forStore(storeId) {
      let gate = gates.get(storeId);
      if (!gate) {
        gate = createStoreGate(options.maxConcurrent, options.pacing, options.platformClock);
        gates.set(storeId, gate);
      }
      return gate;
    },
    delete(storeId) {
      gates.delete(storeId);
    },
    get size() {
      return gates.size;
    },
  };
}

interface Waiter {
  grant(slot: Slot): void;
  fail(err: Error): void;
  /** Local time after which a rate-limit wait is refused instead of waited. */
  deadline: number;
}

type Decision = { go: true; probe: boolean } | { go: false; wait: number | undefined };

export function createStoreGate(
  maxConcurrent: number,
  pacing: boolean,
  platformClock?: PlatformClock,
): StoreGate {
  const queue: Waiter[] = [];
  let inFlight = 0;
  let probesInFlight = 0;
  let lastProbeAt = Number.NEGATIVE_INFINITY;
  let blockedUntil = 0;
  let reactive = false;

  // The current window, as far as responses told us.
  let limit: number | undefined;
  let windowId: number | undefined; // its X-RateLimit-Reset (platform seconds)
  let remaining = 0;
  // Platform clock minus local clock, in ms: every response narrows these bounds
  // (./platform-clock.ts, the estimate the kit's platform clock shares).
  const offset = createClockOffset();
  // GCRA's theoretical time of the next send, for the even spread with a burst.
  let nextSendAt = 0;
  // Our share of the store's consumption (other processes use the same budget): our
  // responses in this window over what the platform counted in it. Kept across windows.
  let share = 1;
  let ownCounted = 0;
  // The platform's count rate in this window (all processes), and our round trip: the
  // other processes' requests in flight are about their rate times the round trip.
  let firstSeenAt = 0;
  let firstCounted = 0;
  let countRate = 0; // requests per ms
  let rttMs: number | undefined;

  let timer: NodeJS.Timeout | undefined;

  const windowEndEarliest = () =>
    windowId === undefined ? undefined : windowId * 1000 - offset.high();
  const windowEndLatest = () =>
    windowId === undefined ? undefined : windowId * 1000 - offset.low();

  /** The clock offset stays: it is not a property of the window. */
  function forgetWindow() {
    windowId = undefined;
  }

  function decide(now: number): Decision {
    if (now < blockedUntil) return { go: false, wait: blockedUntil - now };
    if (!pacing || reactive) return { go: true, probe: false };
    const latest = windowEndLatest();
    if (latest !== undefined && now >= latest + START_MARGIN_MS) forgetWindow();
    const earliest = windowEndEarliest();
    if (windowId === undefined || latest === undefined || earliest === undefined || !limit) {
      // Nothing known about this window: one request at a time until one answers.
      if (probesInFlight === 0 || now - lastProbeAt >= PROBE_PATIENCE_MS) {
        return { go: true, probe: true };
      }
      return { go: false, wait: PROBE_PATIENCE_MS - (now - lastProbeAt) };
    }
    const spreadEnd = earliest - END_MARGIN_MS;
    const nextWindow = latest + START_MARGIN_MS - now;
    // Our part of what is left. The platform's count does not hold the requests in flight
    // yet: ours, and the other processes' (their rate times a round trip).
    // Every process does the same, so together they spread the budget evenly to the end
    // of the window (docs/client.md, "Pacing").
    const othersInFlight = countRate * (1 - share) * (rttMs ?? 0);
    const leftForAll = remaining - inFlight - othersInFlight;
    const available = leftForAll * Math.min(1, share + SHARE_SLACK);
    if (available < 1 || now > spreadEnd) {
      // Spent, or too close to the end: the next window (or a response lowering inFlight).
      return { go: false, wait: Math.max(1, nextWindow) };
    }
    const interval = Math.max(0, spreadEnd - now) / available;
    // Burst credit only when we are (nearly) alone on the store: processes bursting together
    // would overdraw what none of them has seen counted yet.
    const burst = share >= 0.9 ? Math.max(1, Math.floor(limit / 60)) * interval : 0;
    const at = Math.max(nextSendAt, now) - burst;
    if (at > now) return { go: false, wait: Math.min(at - now, Math.max(1, nextWindow)) };
    nextSendAt = Math.max(nextSendAt, now) + interval;
    return { go: true, probe: false };
  }

  function observe(headers: Headers, sentAt: number, receivedAt: number) {
    const l = headerInt(headers, 'x-ratelimit-limit');
    const r = headerInt(headers, 'x-ratelimit-remaining');
    const s = headerInt(headers, 'x-ratelimit-reset');
    if (l === undefined || r === undefined || s === undefined || l <= 0) {
      // A platform that never reports its budget cannot be paced: do not probe forever.
      if (windowId === undefined && !reactive) reactive = true;
      return;
    }
    // The response was produced between sentAt and receivedAt (local), at a platform
    // time within [date, date + 1 s) (Date has one-second resolution).
    const date = responseDate(headers) ?? Math.floor(receivedAt / 1000) * 1000;
    const untilReset = s * 1000 - date;
    if (untilReset <= 0 || untilReset > WINDOW_MS + 1000) {
      // A reset in the past or further than one window: implausible, go reactive.
      reactive = true;
      windowId = undefined;
      offset.reset();
      return;
    }
    reactive = false;
    const expired = windowId === undefined;
    if (!expired && windowId !== undefined && s < windowId) return; // a late answer from an old window
    if (expired || s > windowId!) {
      windowId = s;
      remaining = r;
      nextSendAt = 0;
      ownCounted = 1;
      firstSeenAt = receivedAt;
      firstCounted = l - r;
      countRate = 0;
    } else {
      remaining = Math.min(remaining, r);
      ownCounted++;
    }
    limit = l;
    const counted = l - remaining;
    const rtt = receivedAt - sentAt;
    rttMs = rttMs === undefined ? rtt : 0.8 * rttMs + 0.2 * rtt;
    if (receivedAt - firstSeenAt >= 200) {
      countRate = (counted - firstCounted) / (receivedAt - firstSeenAt);
    }
    // A few requests into the window, the ratio says how many processes draw on it.
    if (counted >= 3) share = Math.min(1, Math.max(0.02, ownCounted / counted));
    // Disjoint from what we knew (the platform's clock jumped): it starts over from this one.
    offset.observe(date, sentAt, receivedAt);
  }

  function schedule(wait: number) {
    if (timer) clearTimeout(timer);
    timer = setTimeout(
      () => {
        timer = undefined;
        pump();
      },
      Math.min(Math.max(1, Math.ceil(wait)), WINDOW_MS),
    );
    // Not unref'd: a script awaiting a paced call must not exit before the call goes.
    // The timer exists only while callers are queued (pump clears it otherwise).
  }

  function grant(waiter: Waiter, now: number, probe: boolean) {
    inFlight++;
    if (probe) {
      probesInFlight++;
      lastProbeAt = now;
    }
    let released = false;
    waiter.grant({
      sentAt: now,
      release(headers) {
        if (released) return;
        released = true;
        if (headers) {
          const receivedAt = Date.now();
          observe(headers, now, receivedAt);
          platformClock?.observeHeaders(headers, now, receivedAt);
        }
        inFlight--;
        if (probe) probesInFlight--;
        pump();
      },
    });
  }

  function pump() {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    while (queue.length > 0 && inFlight < maxConcurrent) {
      const now = Date.now();
      const d = decide(now);
      if (d.go) {
        grant(queue.shift() as Waiter, now, d.probe);
        continue;
      }
      if (d.wait === undefined) return;
      const wait = d.wait;
      // Callers that will not wait that long learn it now, not after the wait.
      for (let i = queue.length - 1; i >= 0; i--) {
        const w = queue[i] as Waiter;
        if (now + wait > w.deadline) {
          queue.splice(i, 1);
          w.fail(new RateLimitedError(Math.ceil(wait / 1000)));
        }
      }
      if (queue.length > 0) schedule(wait);
      return;
    }
  }

  return {
    acquire(signal, maxWaitMs = Number.POSITIVE_INFINITY) {
      return new Promise<Slot>((resolve, reject) => {
        if (signal?.aborted) {
          reject(new AbortedError());
          return;
        }
        const onAbort = () => {
          const i = queue.indexOf(waiter);
          if (i >= 0) queue.splice(i, 1);
          reject(new AbortedError());
          pump();
        };
        const waiter: Waiter = {
          deadline: Date.now() + maxWaitMs,
          grant(slot) {
            signal?.removeEventListener('abort', onAbort);
            resolve(slot);
          },
          fail(err) {
            signal?.removeEventListener('abort', onAbort);
            reject(err);
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(waiter);
        pump();
      });
    },

    block(ms) {
      const capped = Math.min(Math.max(0, ms), WINDOW_MS);
      blockedUntil = Math.max(blockedUntil, Date.now() + capped);
      pump();
    },

    idle() {
      return inFlight === 0 && queue.length === 0 && Date.now() >= blockedUntil;
    },

    snapshot() {
      return {
        mode: reactive || !pacing ? 'reactive' : windowId === undefined ? 'probe' : 'paced',
        limit,
        remaining: windowId === undefined ? undefined : remaining,
        windowEnd: windowEndLatest(),
        inFlight,
        queued: queue.length,
        blockedUntil,
      };
    },
  };
}
