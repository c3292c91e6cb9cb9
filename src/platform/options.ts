import type { Logger } from 'pino';
import * as v from 'valibot';
import { boolean, integer, type SettingNames } from '../options/index.js';
import {
  faultOptionsSchema,
  NO_FAULTS,
  type ResolvedFaults,
  toResolvedFaults,
} from './faults/index.js';
import { parsePlatformOptions } from './schema.js';

export type Tier = 'community' | 'partner' | 'elite';

/** A rate limit: requests per fixed 60 s window (null = unlimited) and requests in flight. */
export interface RateLimit {
  /** Requests per minute per app and store; `null` means unlimited. */
  perMinute: number | null;
  /** Requests in flight at once per app and store. */
  concurrent: number;
}

/** The document's Limits table. */
export const TIER_LIMITS: Readonly<Record<Tier, RateLimit>> = {
  community: { perMinute: 1000, concurrent: 50 },
  partner: { perMinute: 10000, concurrent: 200 },
  elite: { perMinute: null, concurrent: 500 },
};

const HOST_NAME = /^[A-Za-z0-9.:[\]-]{1,253}$/;
const SECONDS = 'must be a finite number of seconds, at least 0.';
const seconds = v.pipe(
  v.number(SECONDS),
  v.check((n) => Number.isFinite(n) && n >= 0, SECONDS),
);

/** A partial rate limit: the global override and `registerApp`'s per-app one. */
export const rateLimitSchema = v.strictObject({
  /** Requests per minute per app and store; `null` means unlimited. */
  perMinute: v.optional(
    v.nullable(
      v.pipe(
        v.number('must be an integer of at least 1, or null for unlimited.'),
        v.check(
          (n) => Number.isSafeInteger(n) && n >= 1,
          'must be an integer of at least 1, or null for unlimited.',
        ),
      ),
    ),
  ),
  /** Requests in flight at once per app and store. */
  concurrent: v.optional(integer(1)),
});

export const platformOptionsSchema = v.strictObject({
  /** TCP port. @default 0 (a free port) */
  port: v.optional(integer(0, 65535), 0),
  /** Interface to listen on. @default '127.0.0.1' */
  host: v.optional(
    v.pipe(
      v.string('must be a host name or address, e.g. 127.0.0.1.'),
      v.nonEmpty('must be a host name or address, e.g. 127.0.0.1.'),
    ),
    '127.0.0.1',
  ),
  /**
   * Extra `Host` names the platform answers to (e.g. a LAN name). Requests
   * with any other Host are refused with 421 (DNS-rebinding defence).
   * Loopback names, `host` and the bound address are always allowed.
   * @default []
   */
  allowedHosts: v.optional(
    v.array(
      v.pipe(
        v.string('must be a host name (no scheme, no port), e.g. devbox.local.'),
        v.regex(HOST_NAME, 'must be a host name (no scheme, no port), e.g. devbox.local.'),
      ),
      'must be an array of host names (no scheme, no port).',
    ),
    () => [],
  ),
  /** SQLite file. @default undefined (in memory) */
  db: v.optional(
    v.pipe(
      v.string('must be the path of a SQLite file (leave it out to keep data in memory).'),
      v.nonEmpty('must be the path of a SQLite file (leave it out to keep data in memory).'),
    ),
  ),
  /** Access token lifetime. @default 86400 */
  accessTokenTtlSeconds: v.optional(integer(1), 86_400),
  /** Authorization code lifetime. @default 60 */
  codeTtlSeconds: v.optional(integer(1), 60),
  /**
   * What a second exchange of a used authorization code does besides
   * answering `invalid_grant`. The document says tokens stay "unchanged"
   * (`false`); `true` also revokes every token issued from that code, as
   * RFC 6749 §4.1.2 suggests (a fault apps must survive without losing data).
   * @default false
   */
  revokeOnCodeReplay: v.optional(boolean(), false),
  /** Refresh token lifetime. @default 7776000 (90 days) */
  refreshTokenTtlSeconds: v.optional(integer(1), 90 * 86_400),
  /** Issue a new refresh token on each refresh. @default true */
  refreshTokenRotation: v.optional(boolean(), true),
  /** How long a rotated refresh token still works, once. @default 60 */
  refreshGraceSeconds: v.optional(seconds, 60),
  /**
   * Overrides every app's tier limits (a field left out keeps the tier's value).
   * Per-app overrides given to `registerApp` win over this.
   * @default undefined (tier limits)
   */
  rateLimit: v.optional(rateLimitSchema),
  /**
   * Length of the fixed rate-limit window. The document's windows are one minute;
   * a shorter one lets benches and tests cover several windows in seconds. With
   * a non-default length, `perMinute` and `X-RateLimit-Limit` count requests per
   * window. @default 60
   */
  rateLimitWindowSeconds: v.optional(integer(1), 60),
  /** Delays in seconds between webhook attempts. @default [5, 30, 120, 600, 1800, 3600] */
  webhookRetrySchedule: v.optional(
    v.array(seconds, 'must be an array of delays in seconds, e.g. [5, 30, 120].'),
    () => [5, 30, 120, 600, 1800, 3600],
  ),
  /** Time a webhook receiver has to answer 2xx. @default 10000 */
  webhookTimeoutMs: v.optional(integer(1), 10_000),
  /** A pino logger, or `true` for one at `info` on stderr. @default false */
  logger: v.optional(
    v.union(
      [v.boolean(), v.custom<Logger>(isLogger)],
      'must be true, false or a pino logger instance.',
    ),
    false,
  ),
  /**
   * Injected faults (latency, 5xx, resets, 429 storms, a hanging token
   * endpoint, dropped or duplicated webhooks); change them later with
   * `platform.setFaults()`. See docs/platform.md. @default undefined (none)
   */
  faults: v.optional(faultOptionsSchema),
});

function isLogger(x: unknown): boolean {
  return (
    typeof x === 'object' &&
    x !== null &&
    typeof (x as { info?: unknown }).info === 'function' &&
    typeof (x as { child?: unknown }).child === 'function'
  );
}

/** `startPlatform(options)`: each field, its default and its meaning are in `platformOptionsSchema`. */
export type PlatformOptions = Omit<
  v.InferInput<typeof platformOptionsSchema>,
  'allowedHosts' | 'webhookRetrySchedule'
> & {
  // Read-only lists are fine: the schema copies them.
  allowedHosts?: readonly string[];
  webhookRetrySchedule?: readonly number[];
};

export type ResolvedPlatformOptions = Omit<
  v.InferOutput<typeof platformOptionsSchema>,
  'faults'
> & {
  faults: ResolvedFaults;
};

/**
 * Validates a partial rate limit (`registerApp`'s per-app override). Throws
 * `PLATFORM_INVALID_OPTIONS` naming `setting.field`.
 */
export function validateRateLimit(setting: string, value: unknown): Partial<RateLimit> {
  return parsePlatformOptions(rateLimitSchema, value, 'registerApp', { prefix: setting });
}

/**
 * The one place options are validated and defaulted: unknown keys, wrong
 * types and out-of-range values throw `PLATFORM_INVALID_OPTIONS` naming each
 * option (or, with `settings`, the CLI flag or variable it came from).
 */
export function resolvePlatformOptions(
  options: PlatformOptions = {},
  context: { where?: string; settings?: SettingNames } = {},
): ResolvedPlatformOptions {
  const parsed = parsePlatformOptions(
    platformOptionsSchema,
    options,
    context.where ?? 'startPlatform',
    context.settings ? { settings: context.settings } : {},
  );
  return {
    ...parsed,
    faults: parsed.faults === undefined ? NO_FAULTS : toResolvedFaults(parsed.faults),
  };
}

export const DEFAULT_PLATFORM_OPTIONS: ResolvedPlatformOptions = resolvePlatformOptions();
