/**
 * Options of the platform API client. `storeApp()` composes these under
 * `client`; `resolveClientOptions` validates them once and fills defaults.
 * One schema gives the type, the defaults and the messages.
 */
import * as v from 'valibot';
import { boolean, fn, integer, parseOptions } from '../options/index.js';

/** The app's tier, which sets the default per-store concurrency cap (the platform's burst). */
export type ApiTier = 'community' | 'partner' | 'elite';

/** Burst (requests in flight per store) of each tier, from the platform document's Limits. */
export const TIER_BURST: Readonly<Record<ApiTier, number>> = {
  community: 50,
  partner: 200,
  elite: 500,
};

export const retryOptionsSchema = v.strictObject({
  /**
   * Retries after the first attempt (429, network errors, 5xx). 0 turns retries off.
   * @default 4
   */
  max: v.optional(integer(0), 4),
  /**
   * First backoff delay for network errors and 5xx; doubles each attempt, with full jitter.
   * @default 250
   */
  baseDelayMs: v.optional(integer(0), 250),
  /**
   * Upper bound of one backoff delay (network errors, 5xx, a 429 without a usable
   * Retry-After). A Retry-After is not bounded by this: see `maxRateLimitWaitMs`.
   * @default 30000
   */
  maxDelayMs: v.optional(integer(0), 30_000),
});

export type RetryOptions = v.InferInput<typeof retryOptionsSchema>;

export const clientOptionsSchema = v.pipe(
  v.strictObject({
    /**
     * The platform's `{base_url}` including `/api/v1`. Normally composed by `storeApp()`
     * from `oauth.apiUrl`.
     * @default undefined (required when the client is built directly)
     */
    baseUrl: v.optional(
      v.pipe(
        v.string('must be an absolute URL ending in /api/v1.'),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          try {
            return new URL(dataset.value).toString().replace(/\/+$/, '');
          } catch {
            addIssue({ message: 'must be an absolute URL ending in /api/v1.' });
            return NEVER;
          }
        }),
      ),
    ),
    /**
     * The platform's session check (`GET {auth_url}/oauth/session`), called by
     * `client.session()`. Normally composed by `storeApp()` from `oauth.sessionCheckPath`.
     * @default the origin of `baseUrl` + '/oauth/session'
     */
    sessionCheckUrl: v.optional(
      v.pipe(
        v.string('must be an absolute URL.'),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          try {
            return new URL(dataset.value).toString();
          } catch {
            addIssue({ message: 'must be an absolute URL.' });
            return NEVER;
          }
        }),
      ),
    ),
    /**
     * Time limit of one attempt (headers and body), in milliseconds.
     * @default 30000
     */
    timeoutMs: v.optional(integer(1), 30_000),
    /**
     * Retry policy: `max` retries (default 4), `baseDelayMs` first backoff (default 250),
     * `maxDelayMs` longest backoff (default 30000).
     * @default { max: 4, baseDelayMs: 250, maxDelayMs: 30000 }
     */
    retries: v.optional(retryOptionsSchema, {}),
    /**
     * The app's tier; sets `maxConcurrent` when that is not given.
     * @default 'community'
     */
    tier: v.optional(
      v.picklist(
        Object.keys(TIER_BURST) as ApiTier[],
        "must be 'community', 'partner' or 'elite'.",
      ),
      'community',
    ),
    /**
     * Requests in flight per store; more wait in a queue (only that store's callers).
     * @default TIER_BURST[tier] (50 for community)
     */
    maxConcurrent: v.optional(integer(1)),
    /**
     * Spread each store's remaining rate-limit budget (X-RateLimit-*) over the window,
     * so bursts do not trip 429s.
     * @default true
     */
    pacing: v.optional(boolean(), true),
    /**
     * Stores whose client object and idle rate-limit state are kept in memory at
     * most; beyond it the least recently used store's are dropped (rebuilt on its
     * next call, which then probes its rate-limit window again). A store with
     * calls in flight, queued, or waiting out a 429 is never dropped. About
     * 7.5 KB per store (docs/architecture.md, "Where per-store state lives").
     * @default 1000
     */
    cacheMaxStores: v.optional(integer(1), 1_000),
    /**
     * Longest time one call may spend waiting for the store's rate limit in total
     * (pacing and Retry-After after 429s). A call whose wait would exceed it fails at
     * once with RateLimitedError (its `retryAfter` says when to try again); within it,
     * a GET, PUT or DELETE waits out every 429, however long its Retry-After (each wait
     * is at most one window). The call's `signal` ends the wait sooner.
     * @default 120000 (two windows)
     */
    maxRateLimitWaitMs: v.optional(integer(0), 120_000),
    /**
     * A custom fetch (tests, proxies).
     * @default globalThis.fetch
     */
    fetch: v.optional(
      fn<typeof fetch>('must be a fetch function (Node 20 has one).'),
      () => globalThis.fetch,
    ),
  }),
  v.transform(
    (o): ResolvedClientOptions => ({
      ...o,
      baseUrl: o.baseUrl,
      sessionCheckUrl:
        o.sessionCheckUrl ??
        (o.baseUrl ? new URL('/oauth/session', o.baseUrl).toString() : undefined),
      maxConcurrent: o.maxConcurrent ?? TIER_BURST[o.tier],
    }),
  ),
);

export type ClientOptions = v.InferInput<typeof clientOptionsSchema>;

export interface ResolvedClientOptions {
  baseUrl: string | undefined;
  sessionCheckUrl: string | undefined;
  timeoutMs: number;
  retries: Required<RetryOptions>;
  tier: ApiTier;
  maxConcurrent: number;
  pacing: boolean;
  cacheMaxStores: number;
  maxRateLimitWaitMs: number;
  fetch: typeof fetch;
}

/** Validates once and fills every default; throws ConfigError naming the option. */
export function resolveClientOptions(
  options: ClientOptions = {},
  prefix = 'client',
): ResolvedClientOptions {
  return parseOptions(clientOptionsSchema, options, { prefix });
}
