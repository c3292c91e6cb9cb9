/**
 * The platform's clock as seen from here: the offset between it and ours,
 * bounded by the `Date` header of every response (the same estimate the
 * rate-limit pacing reads windows with). Platform timestamps (a webhook's
 * timestamp, a token's expiry) are compared with the platform's clock, never
 * with an instance's: a host clock minutes off would refuse valid webhooks
 * and store expiries minutes late.
 */

/** `Date` has whole seconds: the platform's time was within [date, date + 1 s). */
const DATE_RESOLUTION_MS = 1000;

/**
 * Bounds on (platform clock − local clock), in ms, narrowed by each response.
 * A response produced between `sentAt` and `receivedAt` (local) with `Date`
 * `date` says the offset is within [date − receivedAt, date + 1 s − sentAt].
 */
export interface ClockOffset {
  low(): number;
  high(): number;
  /** Narrow the bounds with one response; a reading disjoint from them (a clock jumped) starts over. */
  observe(date: number, sentAt: number, receivedAt: number): void;
  /** Forget what was learned. */
  reset(): void;
}

export function createClockOffset(): ClockOffset {
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  return {
    low: () => low,
    high: () => high,
    observe(date, sentAt, receivedAt) {
      const l = date - receivedAt;
      const h = date + DATE_RESOLUTION_MS - sentAt;
      if (l > high || h < low) {
        low = l;
        high = h;
      } else {
        low = Math.max(low, l);
        high = Math.min(high, h);
      }
    },
    reset() {
      low = Number.NEGATIVE_INFINITY;
      high = Number.POSITIVE_INFINITY;
    },
  };
}

/** The response's `Date` in epoch ms, or undefined when absent or unreadable. */
export function responseDate(headers: Headers): number | undefined {
  const raw = headers.get('date');
  if (raw === null) return undefined;
  const t = Date.parse(raw);
  return Number.isNaN(t) ? undefined : t;
}

export interface PlatformClock {
  /** The platform's time now (epoch ms): ours plus the estimated offset; ours while none is known. */
  now(): number;
  /** Whether a response has told us the offset yet. */
  known(): boolean;
  /** One response's `Date` (epoch ms), seen between `sentAt` and `receivedAt` (our clock). */
  observe(date: number | undefined, sentAt: number, receivedAt: number): void;
  /** The same from a response's headers. */
  observeHeaders(headers: Headers, sentAt: number, receivedAt: number): void;
  /**
   * Ask the platform for its time now (one request, see `probe`), at most once
   * per `RESYNC_MIN_INTERVAL_MS` whoever asks, so a flood of stale webhooks
   * costs the platform one request a half-minute. Resolves true when a new
   * reading arrived.
   */
  resync(): Promise<boolean>;
}

/** The fewest ms between two probes of the platform's clock. */
export const RESYNC_MIN_INTERVAL_MS = 30_000;
/** How long a probe may take before it counts as no answer. */
const PROBE_TIMEOUT_MS = 3_000;

export interface PlatformClockOptions {
  /** The instance's clock. @default Date.now */
  localNow?: () => number;
  /**
   * One request whose answer carries the platform's `Date` (the kit sends
   * HEAD to the token endpoint: any status will do). Without it `resync`
   * resolves false.
   */
  probe?: (signal: AbortSignal) => Promise<Headers>;
}

/**
 * One platform clock for the kit, fed by every response from the platform
 * (API calls, the token endpoint, the clock probe). `localNow` is the
 * instance's clock.
 */
export function createPlatformClock(options: PlatformClockOptions = {}): PlatformClock {
  const localNow = options.localNow ?? Date.now;
  const { probe } = options;
  const offset = createClockOffset();
  let lastProbe = Number.NEGATIVE_INFINITY;
  let probing: Promise<boolean> | undefined;
  async function probeOnce(ask: NonNullable<typeof probe>): Promise<boolean> {
    const sentAt = localNow();
    try {
      const headers = await ask(AbortSignal.timeout(PROBE_TIMEOUT_MS));
      const date = responseDate(headers);
      if (date === undefined) return false;
      clock.observe(date, sentAt, localNow());
      return true;
    } catch {
      // The platform is unreachable: the estimate stays what it was.
      return false;
    }
  }
  const known = () => Number.isFinite(offset.low()) && Number.isFinite(offset.high());
  const clock: PlatformClock = {
    now() {
      if (!known()) return localNow();
      return localNow() + Math.round((offset.low() + offset.high()) / 2);
    },
    known,
    observe(date, sentAt, receivedAt) {
      if (date !== undefined && Number.isFinite(date)) offset.observe(date, sentAt, receivedAt);
    },
    observeHeaders(headers, sentAt, receivedAt) {
      clock.observe(responseDate(headers), sentAt, receivedAt);
    },
    resync() {
      if (probing) return probing;
      // Monotonic: a step of the wall clock must not unlock or lock probing.
      const at = performance.now();
      if (!probe || at - lastProbe < RESYNC_MIN_INTERVAL_MS) return Promise.resolve(false);
      lastProbe = at;
      probing = probeOnce(probe).finally(() => {
        probing = undefined;
      });
      return probing;
    },
  };
  return clock;
}
