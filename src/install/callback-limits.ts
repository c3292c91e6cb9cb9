/**
 * Bounds on the unauthenticated install callback. Anyone can begin an install
 * and call the callback with a made-up code; each such call claims rows
 * (state, code) and spends a token request under the app's client
 * credentials, whose platform rate limit real installs and refreshes share.
 *
 * Per source (the client's address, `req.ip` or `kit.fetch`'s `remoteAddress`) a
 * fixed one-minute window counts the callbacks that failed: a failed exchange or a
 * refusal after the claims. A callback that installs never counts, so merchants
 * installing from one address (an office) never spend each other's budget. Past
 * the budget a source's callbacks answer 429 before any claim or token request.
 *
 * Without an address every caller shares one bucket, which a stranger could fill
 * with junk to lock every merchant out. So that bucket never refuses for its
 * count: past its budget its callbacks go through one at a time (the others wait
 * their turn, up to the in-flight bound), so junk costs at most one token request
 * at a time and a merchant's valid code is still exchanged. The first time it
 * passes its budget in a window, the kit says why and how to give it addresses.
 * Overall, a cap on exchanges in flight.
 */

/** Sources remembered at once; past it the oldest window is forgotten. */
const MAX_SOURCES = 10_000;
const WINDOW_MS = 60_000;

/** An admitted callback; `release` once its answer is sent, saying whether it failed. */
export interface CallbackSlot {
  release(failed: boolean): void;
}

export interface CallbackLimits {
  /**
   * Takes one callback for `source` (undefined: the shared bucket of callers without
   * an address): a slot, or the seconds to wait before retrying.
   */
  take(source: string | undefined): Promise<CallbackSlot | { retryAfterSeconds: number }>;
}

interface Window {
  start: number;
  /** Failed callbacks in this window. */
  failed: number;
  /** Admitted callbacks not released yet (counted against the budget until they are). */
  pending: number;
}

export function createCallbackLimits(config: {
  perSourcePerMinute: number;
  inFlight: number;
  /** Called once per window when the shared bucket passes its budget. */
  onSharedOverBudget?: (failed: number) => void;
  /** @default Date.now */
  now?: () => number;
}): CallbackLimits {
  const now = config.now ?? Date.now;
  const windows = new Map<string, Window>();
  let inFlight = 0;
  /** The shared bucket's one-at-a-time lane past its budget. */
  let lane: Promise<void> = Promise.resolve();
  let laneWaiting = 0;
  let warnedAt = -1;

  function windowOf(source: string, at: number): Window {
    let w = windows.get(source);
    if (w !== undefined && at - w.start < WINDOW_MS) return w;
    if (w === undefined) {
      w = { start: at, failed: 0, pending: 0 };
      if (windows.size >= MAX_SOURCES) {
        const oldest = windows.keys().next().value;
        if (oldest !== undefined) windows.delete(oldest);
      }
    } else {
      // A new window; callbacks still pending keep holding their place in it.
      windows.delete(source);
      w.start = at;
      w.failed = 0;
    }
    // (Re-)inserted last: Map order is window age, oldest first.
    windows.set(source, w);
    return w;
  }

  function admit(w: Window, onRelease?: () => void): CallbackSlot {
    inFlight++;
    w.pending++;
    let released = false;
    return {
      release(failed) {
        if (released) return;
        released = true;
        inFlight--;
        w.pending = Math.max(0, w.pending - 1);
        if (failed) w.failed++;
        onRelease?.();
      },
    };
  }

  /** Past the shared bucket's budget: one callback at a time, in arrival order. */
  async function throughLane(w: Window): Promise<CallbackSlot | { retryAfterSeconds: number }> {
    if (laneWaiting >= config.inFlight) return { retryAfterSeconds: 1 };
    laneWaiting++;
    const previous = lane;
    let free!: () => void;
    lane = new Promise<void>((resolve) => {
      free = resolve;
    });
    await previous;
    laneWaiting--;
    if (inFlight >= config.inFlight) {
      free();
      return { retryAfterSeconds: 1 };
    }
    return admit(w, free);
  }

  return {
    async take(rawSource) {
      const at = now();
      const shared = rawSource === undefined;
      const w = windowOf(shared ? '' : sourceKey(rawSource), at);
      const overBudget = w.failed + w.pending >= config.perSourcePerMinute;
      if (overBudget && shared) {
        if (warnedAt !== w.start) {
          warnedAt = w.start;
          config.onSharedOverBudget?.(w.failed);
        }
        return throughLane(w);
      }
      if (overBudget) {
        return { retryAfterSeconds: Math.max(1, Math.ceil((w.start + WINDOW_MS - at) / 1000)) };
      }
      if (inFlight >= config.inFlight) return { retryAfterSeconds: 1 };
      return admit(w);
    },
  };
}

/**
 * An IPv6 client controls a whole /64: count it as one source. IPv4 (and
 * IPv4-mapped IPv6) addresses count one by one.
 */
function sourceKey(ip: string): string {
  if (ip.startsWith('::ffff:') || !ip.includes(':')) return ip;
  const expanded = ip.split('::');
  const head = (expanded[0] ?? '').split(':').filter(Boolean);
  const tail = expanded.length > 1 ? (expanded[1] ?? '').split(':').filter(Boolean) : [];
  const groups = [...head, ...Array(Math.max(0, 8 - head.length - tail.length)).fill('0'), ...tail];
  return `${groups.slice(0, 4).join(':')}::/64`;
}
