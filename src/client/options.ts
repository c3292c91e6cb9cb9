/**
 * Options of the platform API client. `storeApp()` composes these under
 * `client`; `resolveClientOptions` validates them once and fills defaults.
 */
import { ConfigError } from '../errors/index.js';

/** The app's tier, which sets the default per-store concurrency cap (the platform's burst). */
export type ApiTier = 'community' | 'partner' | 'elite';

/** Burst (requests in flight per store) of each tier, from the platform document's Limits. */
export const TIER_BURST: Readonly<Record<ApiTier, number>> = {
  community: 50,
  partner: 200,
  elite: 500,
};

export interface RetryOptions {
  /**
   * Retries after the first attempt (429, network errors, 5xx). 0 turns retries off.
   * @default 4
   */
  max?: number;
  /**
   * First backoff delay for network errors and 5xx; doubles each attempt, with full jitter.
   * @default 250
   */
  baseDelayMs?: number;
  /**
   * Upper bound of one backoff delay (network errors, 5xx, a 429 without a usable
   * Retry-After). A Retry-After is not bounded by this: see `maxRateLimitWaitMs`.
   * @default 30000
   */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /**
   * The platform's `{base_url}` including `/api/v1`. Normally composed by `storeApp()`
   * from `platformUrl`.
   * @default undefined (required when the client is built directly)
   */
  baseUrl?: string;
  /**
   * Time limit of one attempt (headers and body), in milliseconds.
   * @default 30000
   */
  timeoutMs?: number;
  /** Retry policy. @default { max: 4, baseDelayMs: 250, maxDelayMs: 30000 } */
  retries?: RetryOptions;
  /**
   * The app's tier; sets `maxConcurrent` when that is not given.
   * @default 'community'
   */
  tier?: ApiTier;
  /**
   * Requests in flight per store; more wait in a queue (only that store's callers).
   * @default TIER_BURST[tier] (50 for community)
   */
  maxConcurrent?: number;
  /**
   * Spread each store's remaining rate-limit budget (X-RateLimit-*) over the window,
   * so bursts do not trip 429s.
   * @default true
   */
  pacing?: boolean;
  /**
   * Longest time one call may spend waiting for the store's rate limit in total
   * (pacing and Retry-After after 429s). A call whose wait would exceed it fails at
   * once with RateLimitedError (its `retryAfter` says when to try again); within it,
   * a GET, PUT or DELETE waits out every 429, however long its Retry-After (each wait
   * is at most one window). The call's `signal` ends the wait sooner.
   * @default 120000 (two windows)
   */
  maxRateLimitWaitMs?: number;
  /**
   * A custom fetch (tests, proxies).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
}

export interface ResolvedClientOptions {
  baseUrl: string | undefined;
  timeoutMs: number;
  retries: Required<RetryOptions>;
  tier: ApiTier;
  maxConcurrent: number;
  pacing: boolean;
  maxRateLimitWaitMs: number;
  fetch: typeof fetch;
}

/** An integer option of at least `min`, or its default; ConfigError names the setting. */
export function positiveInt(setting: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ConfigError(setting, `must be an integer of at least ${min}.`);
  }
  return value;
}

/** Validates once and fills every default; throws ConfigError naming the option. */
export function resolveClientOptions(
  options: ClientOptions = {},
  prefix = 'client',
): ResolvedClientOptions {
  const tier = options.tier ?? 'community';
  if (!(tier in TIER_BURST)) {
    throw new ConfigError(`${prefix}.tier`, "must be 'community', 'partner' or 'elite'.");
  }
  let baseUrl: string | undefined;
  if (options.baseUrl !== undefined) {
    try {
      baseUrl = new URL(options.baseUrl).toString().replace(/\/+$/, '');
    } catch {
      throw new ConfigError(`${prefix}.baseUrl`, 'must be an absolute URL ending in /api/v1.');
    }
  }
  const r = options.retries ?? {};
  const retries = {
    max: positiveInt(`${prefix}.retries.max`, r.max, 4, 0),
    baseDelayMs: positiveInt(`${prefix}.retries.baseDelayMs`, r.baseDelayMs, 250, 0),
    maxDelayMs: positiveInt(`${prefix}.retries.maxDelayMs`, r.maxDelayMs, 30_000, 0),
  };
  if (options.pacing !== undefined && typeof options.pacing !== 'boolean') {
    throw new ConfigError(`${prefix}.pacing`, 'must be true or false.');
  }
  const f = options.fetch ?? globalThis.fetch;
  if (typeof f !== 'function') {
    throw new ConfigError(`${prefix}.fetch`, 'must be a fetch function (Node 20 has one).');
  }
  return {
    baseUrl,
    timeoutMs: positiveInt(`${prefix}.timeoutMs`, options.timeoutMs, 30_000),
    retries,
    tier,
    maxConcurrent: positiveInt(`${prefix}.maxConcurrent`, options.maxConcurrent, TIER_BURST[tier]),
    pacing: options.pacing ?? true,
    maxRateLimitWaitMs: positiveInt(
      `${prefix}.maxRateLimitWaitMs`,
      options.maxRateLimitWaitMs,
      120_000,
      0,
    ),
    fetch: f,
  };
}
