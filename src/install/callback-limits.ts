/**
 * Bounds on the unauthenticated install callback. Anyone can begin an install
 * and call the callback with a made-up code; each such call claims rows
 * (state, code) and spends a token request under the app's client
 * credentials, whose platform rate limit real installs and refreshes share.
 * Per source (the client's address, `req.ip`) a fixed one-minute window of
 * callbacks that reach the claims; overall a cap on exchanges in flight.
 */

/** Sources remembered at once; past it the oldest window is forgotten. */
const MAX_SOURCES = 10_000;
const WINDOW_MS = 60_000;

export interface CallbackLimits {
  /**
   * Takes one callback for `source`: undefined when allowed (call `release`
   * once its exchange is over), else the seconds to wait before retrying.
   */
  take(source: string): { release: () => void } | { retryAfterSeconds: number };
}

export function createCallbackLimits(config: {
  perSourcePerMinute: number;
  inFlight: number;
  /** @default Date.now */
  now?: () => number;
}): CallbackLimits {
  const now = config.now ?? Date.now;
  const windows = new Map<string, { start: number; count: number }>();
  let inFlight = 0;

  return {
    take(rawSource) {
      const at = now();
      const source = sourceKey(rawSource);
      let w = windows.get(source);
      if (w === undefined || at - w.start >= WINDOW_MS) {
        if (w !== undefined) windows.delete(source);
        w = { start: at, count: 0 };
        if (windows.size >= MAX_SOURCES) {
          const oldest = windows.keys().next().value;
          if (oldest !== undefined) windows.delete(oldest);
        }
        // Re-inserted last: Map order is window age, oldest first.
        windows.set(source, w);
      }
      if (w.count >= config.perSourcePerMinute) {
        return { retryAfterSeconds: Math.max(1, Math.ceil((w.start + WINDOW_MS - at) / 1000)) };
      }
      if (inFlight >= config.inFlight) return { retryAfterSeconds: 1 };
      w.count++;
      inFlight++;
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          inFlight--;
        },
      };
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
