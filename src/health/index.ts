/**
 * The health report (`kit.health()`) and its opt-in route: database
 * reachability, the purge outbox and the last refresh failure. Everything in
 * it is safe to show to whoever can reach the route: counts, ages, times and
 * stable error codes; no store id, token, URL or error message.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { RefreshFailure } from '../refresh/manager.js';
import type { PendingPurge } from '../storage/types.js';
import { errorType } from '../telemetry/index.js';
import { HEALTH_DEFAULTS, type ResolvedHealthOptions } from './options.js';

export type { HealthOptions, ResolvedHealthOptions } from './options.js';

/** What `kit.health()` and the health route report. */
export interface HealthReport {
  /** `unavailable` when the database does not answer (the route then answers 503). */
  status: 'ok' | 'unavailable';
  /** When this report was made (reports are reused for `health.cacheMs`). */
  checkedAt: string;
  database: {
    status: 'up' | 'down';
    /** How long the check query took, in ms (null when it failed). */
    latencyMs: number | null;
    /** Stable code of the failure (`STORAGE_UNAVAILABLE`, `HEALTH_DB_TIMEOUT`, …), else null. */
    error: string | null;
  };
  /** The purge outbox; null when the database is down. */
  purges: {
    pending: number;
    /** Age of the oldest pending purge, in whole seconds; null when none is pending. */
    oldestAgeSeconds: number | null;
    /** Pending purges whose last attempt failed. */
    failing: number;
  } | null;
  refresh: {
    /** The last refresh in this process that failed, or null. */
    lastFailure: { at: string; code: string } | null;
  };
}

export const HEALTH_DB_TIMEOUT = 'HEALTH_DB_TIMEOUT' as const;

export interface HealthCheckDeps {
  /** Reading the outbox is the database probe: one query answers both. */
  pendingPurges: { list(): Promise<PendingPurge[]> };
  lastRefreshFailure: () => RefreshFailure | null;
  options: Pick<ResolvedHealthOptions, 'dbTimeoutMs' | 'cacheMs'> &
    Partial<Pick<ResolvedHealthOptions, 'detail' | 'token'>>;
  /** @default Date.now */
  now?: () => number;
}

export interface HealthCheck {
  /** The current report; reused for `cacheMs`, one check at a time. */
  report(): Promise<HealthReport>;
  /**
   * `GET` handler: 200 or 503, never cached by proxies. The body is the report
   * when `detail` is `'public'` or the request bears `token`; else only `{ status }`.
   */
  handler(): (req: Request, res: Response) => Promise<void>;
}

export function createHealthCheck(deps: HealthCheckDeps): HealthCheck {
  const now = deps.now ?? Date.now;
  const { dbTimeoutMs, cacheMs } = deps.options;
  let cached: { report: HealthReport; at: number } | undefined;
  let running: Promise<HealthReport> | undefined;

  async function probe(): Promise<HealthReport> {
    const started = now();
    let database: HealthReport['database'];
    let purges: HealthReport['purges'] = null;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error('timeout'), { code: HEALTH_DB_TIMEOUT })),
          dbTimeoutMs,
        );
        timer.unref();
      });
      const list = await Promise.race([deps.pendingPurges.list(), timeout]);
      const at = now();
      database = { status: 'up', latencyMs: at - started, error: null };
      const oldest = list.reduce<number | null>(
        (min, p) => (min === null || p.createdAt.getTime() < min ? p.createdAt.getTime() : min),
        null,
      );
      purges = {
        pending: list.length,
        oldestAgeSeconds: oldest === null ? null : Math.max(0, Math.floor((at - oldest) / 1000)),
        failing: list.filter((p) => p.lastError !== null).length,
      };
    } catch (err) {
      database = { status: 'down', latencyMs: null, error: errorType(err) };
    } finally {
      clearTimeout(timer);
    }
    const failure = deps.lastRefreshFailure();
    return {
      status: database.status === 'up' ? 'ok' : 'unavailable',
      checkedAt: new Date(now()).toISOString(),
      database,
      purges,
      refresh: {
        lastFailure: failure ? { at: failure.at.toISOString(), code: failure.code } : null,
      },
    };
  }

  function report(): Promise<HealthReport> {
    if (cached && now() - cached.at < cacheMs) return Promise.resolve(cached.report);
    // A flood of probes shares the check under way instead of queueing queries.
    running ??= probe()
      .then((r) => {
        cached = { report: r, at: now() };
        return r;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    report,
    handler() {
      const detail = deps.options.detail ?? HEALTH_DEFAULTS.detail;
      const token = deps.options.token;
      const expected = token === undefined ? undefined : digest(token);
      /** The request bears the health token (compared in constant time, as digests). */
      const bearsToken = (req: Request): boolean => {
        if (expected === undefined) return false;
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
        return m?.[1] !== undefined && timingSafeEqual(digest(m[1]), expected);
      };
      return async function storeAppHealth(req: Request, res: Response): Promise<void> {
        const r = await report();
        res
          .status(r.status === 'ok' ? 200 : 503)
          .set('Cache-Control', 'no-store')
          .json(detail === 'public' || bearsToken(req) ? r : { status: r.status });
      };
    },
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
