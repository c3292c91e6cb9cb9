/**
 * A budget for the warnings a request can cause: at most `perWindow` lines of one
 * message per window, the rest counted and reported on the next line that is written.
 *
 * Why: a refused launch token, a launch outside a frame or a cross-site write each log a
 * warning, and any client can send them by the thousand a second. Unbounded, that is a log
 * flood (disk, the log pipeline's bill, real warnings buried) paid for by nothing more
 * than requests. The window is this instance's own clock: the budget is per process.
 */

/** The slice of a logger the budget wraps. */
export interface WarnLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface LogBudgetOptions {
  /** Lines of one message written per window at most. @default 10 */
  perWindow?: number;
  /** @default 60000 */
  windowMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** Messages tracked at most (the oldest forgotten first). */
const MAX_MESSAGES = 64;

interface Spent {
  windowStart: number;
  written: number;
  suppressed: number;
}

/**
 * `logger` with its warnings under the budget, per message text (the kit's messages are
 * constants). A line written after others were dropped carries `suppressed: <count>`.
 */
export function budgetedWarnings(logger: WarnLogger, options: LogBudgetOptions = {}): WarnLogger {
  const perWindow = options.perWindow ?? 10;
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const spent = new Map<string, Spent>();
  return {
    warn(obj, msg) {
      const t = now();
      let s = spent.get(msg);
      if (s === undefined) {
        // The kit's messages are a handful of constants; the bound only guards a caller
        // that would log ever-new message texts.
        if (spent.size >= MAX_MESSAGES) spent.delete(spent.keys().next().value as string);
        s = { windowStart: t, written: 0, suppressed: 0 };
        spent.set(msg, s);
      } else if (t - s.windowStart >= windowMs || t < s.windowStart) {
        s.windowStart = t;
        s.written = 0;
      }
      if (s.written >= perWindow) {
        s.suppressed++;
        return;
      }
      s.written++;
      const suppressed = s.suppressed;
      s.suppressed = 0;
      logger.warn(suppressed > 0 ? { ...obj, suppressed } : obj, msg);
    },
  };
}
