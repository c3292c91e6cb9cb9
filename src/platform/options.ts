import type { Logger } from 'pino';
import { PLATFORM_INVALID_OPTIONS, PlatformError } from './errors.js';
import { type FaultOptions, type ResolvedFaults, resolveFaults } from './faults/index.js';

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

export interface PlatformOptions {
  /** TCP port. @default 0 (a free port) */
  port?: number;
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
  /**
   * Extra `Host` names the platform answers to (e.g. a LAN name). Requests
   * with any other Host are refused with 421 (DNS-rebinding defence).
   * Loopback names, `host` and the bound address are always allowed.
   * @default []
   */
  allowedHosts?: readonly string[];
  /** SQLite file. @default undefined (in memory) */
  db?: string;
  /** Access token lifetime. @default 86400 */
  accessTokenTtlSeconds?: number;
  /** Authorization code lifetime. @default 60 */
  codeTtlSeconds?: number;
  /**
   * What a second exchange of a used authorization code does besides
   * answering `invalid_grant`. The document says tokens stay "unchanged"
   * (`false`); `true` also revokes every token issued from that code, as
   * RFC 6749 §4.1.2 suggests (a fault apps must survive without losing data).
   * @default false
   */
  revokeOnCodeReplay?: boolean;
  /** Refresh token lifetime. @default 7776000 (90 days) */
  refreshTokenTtlSeconds?: number;
  /** Issue a new refresh token on each refresh. @default true */
  refreshTokenRotation?: boolean;
  /** How long a rotated refresh token still works, once. @default 60 */
  refreshGraceSeconds?: number;
  /**
   * Overrides every app's tier limits (a field left out keeps the tier's value).
   * Per-app overrides given to `registerApp` win over this.
   * @default undefined (tier limits)
   */
  rateLimit?: Partial<RateLimit>;
  /**
   * Length of the fixed rate-limit window. The document's windows are one minute;
   * a shorter one lets benches and tests cover several windows in seconds. With
   * a non-default length, `perMinute` and `X-RateLimit-Limit` count requests per
   * window. @default 60
   */
  rateLimitWindowSeconds?: number;
  /** Delays in seconds between webhook attempts. @default [5, 30, 120, 600, 1800, 3600] */
  webhookRetrySchedule?: readonly number[];
  /** Time a webhook receiver has to answer 2xx. @default 10000 */
  webhookTimeoutMs?: number;
  /** A pino logger, or `true` for one at `info` on stderr. @default false */
  logger?: Logger | boolean;
  /**
   * Injected faults (latency, 5xx, resets, 429 storms, a hanging token
   * endpoint, dropped or duplicated webhooks); change them later with
   * `platform.setFaults()`. See docs/platform.md. @default undefined (none)
   */
  faults?: FaultOptions;
}

export interface ResolvedPlatformOptions {
  port: number;
  host: string;
  allowedHosts: readonly string[];
  db: string | undefined;
  accessTokenTtlSeconds: number;
  codeTtlSeconds: number;
  revokeOnCodeReplay: boolean;
  refreshTokenTtlSeconds: number;
  refreshTokenRotation: boolean;
  refreshGraceSeconds: number;
  rateLimit: Partial<RateLimit> | undefined;
  rateLimitWindowSeconds: number;
  webhookRetrySchedule: readonly number[];
  webhookTimeoutMs: number;
  logger: Logger | boolean;
  faults: ResolvedFaults;
}

export const DEFAULT_PLATFORM_OPTIONS: ResolvedPlatformOptions = {
  port: 0,
  host: '127.0.0.1',
  allowedHosts: [],
  db: undefined,
  accessTokenTtlSeconds: 86400,
  codeTtlSeconds: 60,
  revokeOnCodeReplay: false,
  refreshTokenTtlSeconds: 90 * 86400,
  refreshTokenRotation: true,
  refreshGraceSeconds: 60,
  rateLimit: undefined,
  rateLimitWindowSeconds: 60,
  webhookRetrySchedule: [5, 30, 120, 600, 1800, 3600],
  webhookTimeoutMs: 10_000,
  logger: false,
  faults: resolveFaults(undefined),
};

function fail(setting: string, message: string): never {
  throw new PlatformError(PLATFORM_INVALID_OPTIONS, `startPlatform: ${setting} ${message}`);
}

function nonNegativeNumber(setting: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    fail(setting, 'must be a finite number >= 0');
  }
  return value;
}

function bool(setting: string, value: unknown): boolean {
  if (typeof value !== 'boolean') fail(setting, 'must be true or false');
  return value;
}

function positiveInt(setting: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    fail(setting, 'must be an integer >= 1');
  }
  return value;
}

/** Validates a partial rate limit (used for the global and the per-app override). */
export function validateRateLimit(setting: string, value: unknown): Partial<RateLimit> {
  if (typeof value !== 'object' || value === null) fail(setting, 'must be an object');
  const v = value as Record<string, unknown>;
  const out: Partial<RateLimit> = {};
  if (v['perMinute'] !== undefined) {
    out.perMinute =
      v['perMinute'] === null ? null : positiveInt(`${setting}.perMinute`, v['perMinute']);
  }
  if (v['concurrent'] !== undefined) {
    out.concurrent = positiveInt(`${setting}.concurrent`, v['concurrent']);
  }
  return out;
}

/** The one place options are validated and defaulted. */
export function resolvePlatformOptions(options: PlatformOptions = {}): ResolvedPlatformOptions {
  const d = DEFAULT_PLATFORM_OPTIONS;
  const port = options.port ?? d.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail('port', 'must be 0..65535');
  const host = options.host ?? d.host;
  if (typeof host !== 'string' || host.length === 0) fail('host', 'must be a host name');
  if (options.db !== undefined && typeof options.db !== 'string') fail('db', 'must be a path');
  const allowedHosts = options.allowedHosts ?? d.allowedHosts;
  if (
    !Array.isArray(allowedHosts) ||
    allowedHosts.some((h) => typeof h !== 'string' || !/^[A-Za-z0-9.:[\]-]{1,253}$/.test(h))
  ) {
    fail('allowedHosts', 'must be an array of host names (no scheme, no port)');
  }
  const schedule = options.webhookRetrySchedule ?? d.webhookRetrySchedule;
  if (!Array.isArray(schedule)) fail('webhookRetrySchedule', 'must be an array of seconds');
  for (const [i, s] of schedule.entries()) nonNegativeNumber(`webhookRetrySchedule[${i}]`, s);
  return {
    port,
    host,
    allowedHosts: [...allowedHosts],
    db: options.db,
    accessTokenTtlSeconds: positiveInt(
      'accessTokenTtlSeconds',
      options.accessTokenTtlSeconds ?? d.accessTokenTtlSeconds,
    ),
    codeTtlSeconds: positiveInt('codeTtlSeconds', options.codeTtlSeconds ?? d.codeTtlSeconds),
    revokeOnCodeReplay: bool(
      'revokeOnCodeReplay',
      options.revokeOnCodeReplay ?? d.revokeOnCodeReplay,
    ),
    refreshTokenTtlSeconds: positiveInt(
      'refreshTokenTtlSeconds',
      options.refreshTokenTtlSeconds ?? d.refreshTokenTtlSeconds,
    ),
    refreshTokenRotation: options.refreshTokenRotation ?? d.refreshTokenRotation,
    refreshGraceSeconds: nonNegativeNumber(
      'refreshGraceSeconds',
      options.refreshGraceSeconds ?? d.refreshGraceSeconds,
    ),
    rateLimit:
      options.rateLimit === undefined
        ? undefined
        : validateRateLimit('rateLimit', options.rateLimit),
    rateLimitWindowSeconds: positiveInt(
      'rateLimitWindowSeconds',
      options.rateLimitWindowSeconds ?? d.rateLimitWindowSeconds,
    ),
    webhookRetrySchedule: [...schedule],
    webhookTimeoutMs: positiveInt(
      'webhookTimeoutMs',
      options.webhookTimeoutMs ?? d.webhookTimeoutMs,
    ),
    logger: options.logger ?? d.logger,
    faults: options.faults === undefined ? d.faults : resolveFaults(options.faults),
  };
}
