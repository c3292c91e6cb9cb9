/**
 * The health report (`kit.health()`) and its opt-in route: whether the
 * database answers and accepts writes, the purge outbox, the last refresh
 * failure and refreshed tokens waiting to be stored. Everything in it is safe
 * to show to whoever can reach the route: counts, ages, times, stable error
 * codes and failure reasons; no store id, token, URL or error message.
 */

import { BEARER_TOKEN } from '../core/bearer.js';
import { type CoreHandler, respond } from '../core/http.js';
import { unref } from '../core/timers.js';
import { sha256, timingSafeEqual } from '../crypto/primitives.js';
import { StorageError, type StorageFailureReason } from '../errors/index.js';
import type { RefreshFailure } from '../refresh/manager.js';
import type { PendingPurge } from '../storage/types.js';
import { errorType } from '../telemetry/index.js';
import { HEALTH_DEFAULTS, type ResolvedHealthOptions } from './options.js';

export type { HealthOptions, ResolvedHealthOptions } from './options.js';

/** What `kit.health()` and the health route report. */
export interface HealthReport {
  /**
   * `unavailable` when the database does not answer or refuses writes;
   * `draining` once the instance is shutting down (`kit.shutdown()`): the route
   * then answers 503, so readiness fails before the instance stops.
   */
  status: 'ok' | 'unavailable' | 'draining';
  /** When this report was made (reports are reused for `health.cacheMs`). */
  checkedAt: string;
  database: {
    /** `up`: reads and writes work; `read_only`: reads work, the write probe failed; `down`: no answer. */
    status: 'up' | 'read_only' | 'down';
    /** How long the check (read, then write probe) took, in ms (null when it failed). */
    latencyMs: number | null;
    /** Stable code of the failure (`STORAGE_UNAVAILABLE`, `HEALTH_DB_TIMEOUT`, …), else null. */
    error: string | null;
    /**
     * Why it failed (`disk_full`, `read_only`, `locked`, `timeout`,
     * `unreachable`, `database_missing`, `access_denied`, `schema`, `unknown`), else null.
     */
    reason: StorageFailureReason | null;
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
    /** Refreshed token pairs this process holds because storing them failed (retried). */
    pendingWrites: number;
  };
}

export const HEALTH_DB_TIMEOUT = 'HEALTH_DB_TIMEOUT' as const;

/**
 * A flood of probes with `cacheMs: 0` still writes at most one probe row a
 * second (rows expire after a minute and are pruned with the other claims).
 */
const WRITE_PROBE_MIN_INTERVAL_MS = 1000;

/** The claim namespace of the health write probe's rows. */
export const HEALTH_PROBE_NAMESPACE = 'store-app-kit.health' as const;

export interface HealthCheckDeps {
  /** Reading the outbox is the database probe: one query answers both. */
  pendingPurges: { list(): Promise<PendingPurge[]> };
  lastRefreshFailure: () => RefreshFailure | null;
  /**
   * A small real write (the kit writes a short-lived claim row): a disk that
   * is full or a database that is read-only answers reads but fails this.
   * Without it only reads are checked.
   */
  writeProbe?: () => Promise<unknown>;
  /** @default () => 0 */
  pendingTokenWrites?: () => number;
  /** True once the instance is shutting down (src/core/drain.ts). @default () => false */
  draining?: () => boolean;
  options: Pick<ResolvedHealthOptions, 'dbTimeoutMs' | 'cacheMs'> &
    Partial<Pick<ResolvedHealthOptions, 'detail' | 'token'>>;
  /** @default Date.now */
  now?: () => number;
}

export interface HealthCheck {
  /** The current report; reused for `cacheMs`, one check at a time. */
  report(): Promise<HealthReport>;
  /**
   * The route (both shells): 200 or 503, never cached by proxies. The body is the
   * report when `detail` is `'public'` or the request bears `token`; else only `{ status }`.
   */
  coreHandler(): CoreHandler;
}

function reasonOf(err: unknown): StorageFailureReason {
  if (err instanceof StorageError) return err.reason;
  return (err as { code?: unknown } | null)?.code === HEALTH_DB_TIMEOUT ? 'timeout' : 'unknown';
}

export function createHealthCheck(deps: HealthCheckDeps): HealthCheck {
  const now = deps.now ?? Date.now;
  const { dbTimeoutMs, cacheMs } = deps.options;
  let cached: { report: HealthReport; at: number } | undefined;
  let running: Promise<HealthReport> | undefined;
  let lastWrite: { at: number; error: unknown } | undefined;

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
        unref(timer);
      });
      const list = await Promise.race([deps.pendingPurges.list(), timeout]);
      let writeError: unknown;
      if (deps.writeProbe && lastWrite && now() - lastWrite.at < WRITE_PROBE_MIN_INTERVAL_MS) {
        writeError = lastWrite.error;
      } else if (deps.writeProbe) {
        try {
          await Promise.race([deps.writeProbe(), timeout]);
        } catch (err) {
          writeError = err;
        }
        lastWrite = { at: now(), error: writeError };
      }
      const at = now();
      database =
        writeError === undefined
          ? { status: 'up', latencyMs: at - started, error: null, reason: null }
          : {
              status: 'read_only',
              latencyMs: null,
              error: errorType(writeError),
              reason: reasonOf(writeError),
            };
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
      database = { status: 'down', latencyMs: null, error: errorType(err), reason: reasonOf(err) };
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
        pendingWrites: deps.pendingTokenWrites?.() ?? 0,
      },
    };
  }

  /** The report, marked `draining` once the instance shuts down. */
  async function report(): Promise<HealthReport> {
    const r = await current();
    return deps.draining?.() ? { ...r, status: 'draining' } : r;
  }

  function current(): Promise<HealthReport> {
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

  /** Status and body of the health route, given the request's `Authorization` header (read only if needed). */
  function answerFor() {
    const detail = deps.options.detail ?? HEALTH_DEFAULTS.detail;
    const token = deps.options.token;
    const expected = token === undefined ? undefined : digest(token);
    /** The request bears the health token (compared in constant time, as digests). */
    const bearsToken = (authorization: () => string | undefined): boolean => {
      if (expected === undefined) return false;
      const m = BEARER_TOKEN.exec(authorization() ?? '');
      return m?.[1] !== undefined && timingSafeEqual(digest(m[1]), expected);
    };
    return async (authorization: () => string | undefined) => {
      // Readiness fails at once and costs no query: the load balancer stops sending here.
      if (deps.draining?.()) return { status: 503, body: { status: 'draining' } };
      const r = await report();
      return {
        status: r.status === 'ok' ? 200 : 503,
        body: detail === 'public' || bearsToken(authorization) ? r : { status: r.status },
      };
    };
  }

  return {
    report,
    coreHandler() {
      const answer = answerFor();
      return async function storeAppHealth(req) {
        const a = await answer(() => req.header('authorization'));
        return respond.json(a.status, a.body, { 'cache-control': 'no-store' });
      };
    },
  };
}

function digest(value: string): Uint8Array {
  return sha256(value);
}
