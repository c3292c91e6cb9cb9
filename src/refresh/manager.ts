/**
 * The token manager: hands out access tokens that are not expired and refreshes
 * them exactly once per expiry across every process sharing the database.
 *
 * - In a process, refreshes of one store are single-flight (a Map of promises).
 * - Across processes, the refresh runs under the installation's lease, taken by
 *   compare-and-swap on its `version` (a SQLite transaction cannot stay open
 *   across the HTTP call). A process that loses re-reads until the version
 *   moves (the winner committed) or the lease expires (the winner died).
 * - New tokens are committed (`completeRefresh`) before anyone uses them, so a
 *   crash after the refresh call cannot lose a rotated refresh token.
 * - Valid installations are cached in memory for `cacheTtlMs`, so the request
 *   path reads neither the database nor the platform while a token is good.
 */
import { AbortedError, NotInstalledError, ReauthorizationRequiredError } from '../client/errors.js';
import type { TokenSource } from '../client/transport.js';
import type { Installation, InstallationRepository } from '../storage/types.js';
import { ATTR, countRefresh, errorType, inSpan, SPAN } from '../telemetry/index.js';
import {
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  RefreshClientRejectedError,
  RefreshUnavailableError,
} from './errors.js';
import { cacheEntry, createInstallationCache, ticketStands } from './installation-cache.js';
import { createLeaseRefresh } from './lease-refresh.js';
import type { ResolvedRefreshOptions } from './options.js';
import { createPendingWrites } from './pending-writes.js';
import type {
  CacheTicket,
  Mode,
  RefreshCall,
  RefreshCore,
  RefreshLogger,
  SweepResult,
  Trigger,
} from './refresh-types.js';
import { createSweep } from './sweep.js';

export type { RefreshCall, RefreshedTokens, RefreshLogger, SweepResult } from './refresh-types.js';
export {
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  RefreshClientRejectedError,
  RefreshUnavailableError,
};

export interface TokenManagerDeps {
  installations: InstallationRepository;
  refresh: RefreshCall;
  options: ResolvedRefreshOptions;
  /**
   * Called once the installation was flagged as needing re-authorisation
   * after the platform revoked its token (drop in-memory copies). Never a
   * purge: an error answer from the platform is no authenticated reason to
   * delete data; only a verified app.uninstalled webhook or kit.purge() is.
   */
  onRevoked?: (storeId: string) => Promise<unknown> | unknown;
  logger?: RefreshLogger;
  /** @default Date.now */
  now?: () => number;
  /**
   * The platform's clock (estimated from its `Date` headers): token expiries
   * are stored and compared in it, never in this instance's clock.
   * @default now
   */
  platformNow?: () => number;
}

export interface TokenManager extends TokenSource {
  /**
   * The installation with a token valid beyond the window (refreshed first if
   * needed). Throws NotInstalledError, ReauthorizationRequiredError,
   * RefreshUnavailableError or StorageError.
   */
  getInstallation(storeId: string, signal?: AbortSignal): Promise<Installation>;
  /** Forget the cached installation (after purge, reinstall, or a change made elsewhere). */
  invalidate(storeId: string): void;
  /** Like getInstallation, but reads the database first (the cache may be stale). */
  reload(storeId: string, signal?: AbortSignal): Promise<Installation>;
  /**
   * The installation getInstallation would answer from memory right now (same
   * cache age and token window checks), or undefined when it would have to
   * load or refresh. Synchronous: the request path's fast lane.
   */
  cachedInstallation(storeId: string): Installation | undefined;
  /**
   * The ticket of the cache entry `cachedInstallation` answers from right now, or
   * undefined when it answers from elsewhere (a pending write) or not at all.
   */
  cachedTicket(storeId: string): CacheTicket | undefined;
  /**
   * Whether `cachedInstallation` would still answer with the installation `ticket` was
   * given with (the same cache age and token window checks, no look-up): a reader that
   * built something from that installation may use it again. False sends the reader
   * back to `cachedInstallation`.
   */
  stillCached(ticket: CacheTicket): boolean;
  /**
   * One pass of the sweep: refreshes every installation expiring within the
   * window, `sweepConcurrency` at a time, reading due ids page by page until
   * none is left (failures and stores leased by another process are skipped
   * for the rest of the pass).
   */
  sweep(): Promise<SweepResult>;
  /** Start the background sweep (an unref'd interval). Idempotent. */
  startSweep(): void;
  stopSweep(): Promise<void>;
  /**
   * Writes every refreshed pair still waiting once more (a shutdown, before
   * storage closes); resolves with how many could not be stored (lost with the
   * process: another one refreshes within the platform's grace period).
   */
  flushPendingWrites(): Promise<number>;
  /** The last refresh in this process that failed (time and error code), or null. */
  lastRefreshFailure(): RefreshFailure | null;
  /** Refreshed token pairs kept in memory because storing them failed (retried until stored). */
  pendingWrites(): number;
}

/** A failed refresh, as the health endpoint reports it: no store id, no message. */
export interface RefreshFailure {
  at: Date;
  /** Stable error code (`REFRESH_UNAVAILABLE`, `REAUTHORIZATION_REQUIRED`, …). */
  code: string;
}

export function createTokenManager(deps: TokenManagerDeps): TokenManager {
  const { installations, options, logger } = deps;
  const now = deps.now ?? Date.now;
  // Expiries are the platform's timestamps: one clock, the platform's.
  const platformNow = deps.platformNow ?? now;
  const windowMs = options.windowSeconds * 1000;
  const inFlight: RefreshCore['inFlight'] = new Map();
  const revoking = new Map<string, Promise<boolean>>();
  const committedHere = new WeakMap<Installation, number>();
  let lastFailure: RefreshFailure | null = null;
  const pending = createPendingWrites({
    installations,
    leaseMs: options.leaseMs,
    baseDelayMs: Math.max(50, options.baseDelayMs),
    maxDelayMs: options.storeRetryMaxDelayMs,
    onLanded: (inst) => {
      remember(inst);
    },
    onDropped: (storeId) => {
      cache.delete(storeId);
    },
    logger,
    now,
  });

  // Bounded (LRU): memory does not grow with the number of installed stores.
  const cache = createInstallationCache(options.cacheMaxStores);
  const core = {
    installations,
    options,
    logger,
    now,
    platformNow,
    windowMs,
    cache,
    inFlight,
    committedHere,
    pending,
  };
  const lease = createLeaseRefresh(core, deps.refresh, { load, satisfied, remember });

  function fresh(inst: Installation): boolean {
    return inst.accessTokenExpiresAt.getTime() - platformNow() > windowMs;
  }

  function remember(inst: Installation, mode: Mode = 'wait'): Installation {
    // The sweep only replaces a copy already held; it never adds one.
    if (options.cacheTtlMs > 0 && (mode === 'wait' || cache.has(inst.storeId))) {
      cache.set(inst.storeId, cacheEntry(inst, now()));
    }
    return inst;
  }

  function satisfied(inst: Installation, trigger: Trigger): boolean {
    if (!fresh(inst)) return false;
    return trigger.kind === 'window' || inst.accessToken !== trigger.token;
  }

  async function load(storeId: string): Promise<Installation> {
    const inst = await installations.get(storeId);
    if (!inst) {
      cache.delete(storeId);
      throw new NotInstalledError(storeId);
    }
    if (inst.needsReauth) {
      cache.delete(storeId);
      throw new ReauthorizationRequiredError(storeId);
    }
    return inst;
  }

  /**
   * One refresh in a span, counted by outcome: `refreshed` (this process
   * committed new tokens), `joined` (another process did), `reauth_required`,
   * `not_installed` or `failed`. Failures are kept for the health endpoint.
   */
  function tracedRefresh(
    storeId: string,
    refresh: () => Promise<Installation | null>,
  ): Promise<Installation | null> {
    return inSpan(
      SPAN.refresh,
      { operation: 'refresh', attributes: () => ({ [ATTR.storeId]: storeId }) },
      async (span) => {
        let inst: Installation | null;
        try {
          inst = await refresh();
        } catch (err) {
          const code = errorType(err);
          const outcome =
            code === 'REAUTHORIZATION_REQUIRED'
              ? 'reauth_required'
              : code === 'NOT_INSTALLED'
                ? 'not_installed'
                : 'failed';
          countRefresh(outcome);
          if (span.isRecording()) span.setAttribute(ATTR.outcome, outcome);
          // A store uninstalled meanwhile is no refresh failure for the operator.
          if (outcome !== 'not_installed') lastFailure = { at: new Date(now()), code };
          throw err;
        }
        const outcome =
          inst === null ? 'lease_lost' : committedHere.has(inst) ? 'refreshed' : 'joined';
        countRefresh(outcome);
        if (span.isRecording()) span.setAttribute(ATTR.outcome, outcome);
        return inst;
      },
    );
  }

  /** Starts the store's refresh and registers it for single-flight. */
  function start(storeId: string, trigger: Trigger, mode: Mode): Promise<Installation | null> {
    const run = () => lease.refreshUnderLease(storeId, trigger, mode);
    return track(inFlight, storeId, () => tracedRefresh(storeId, run));
  }

  /**
   * Joins a refresh under way. One the sweep started may have left the store
   * to another process (null): then this caller, who needs the token, waits
   * for that process itself.
   */
  async function join(
    running: Promise<Installation | null>,
    storeId: string,
    trigger: Trigger,
    signal?: AbortSignal,
  ): Promise<Installation> {
    const inst = await (signal ? raceAbort(running, signal) : running);
    return inst ?? refreshOnce(storeId, trigger, signal);
  }

  /** Single-flight per store in this process. */
  function refreshOnce(
    storeId: string,
    trigger: Trigger,
    signal?: AbortSignal,
  ): Promise<Installation> {
    const running = inFlight.get(storeId);
    if (running) return join(running, storeId, trigger, signal);
    // The shared promise must not die with one caller's signal; callers abort their own wait.
    const p = start(storeId, trigger, 'wait') as Promise<Installation>;
    return signal ? raceAbort(p, signal) : p;
  }

  /** A cache entry (by its ticket) is younger than `cacheTtlMs` and its token outside the window. */
  function usable(ticket: CacheTicket): boolean {
    return ticketStands(ticket, now(), platformNow(), options.cacheTtlMs, windowMs);
  }

  function cachedInstallation(storeId: string): Installation | undefined {
    const waiting = pending.get(storeId);
    if (waiting) return fresh(waiting) ? waiting : undefined;
    const hit = cache.get(storeId);
    if (hit === undefined) return undefined;
    if (usable(hit.ticket)) return hit.installation;
    // Aged out: the next request reloads it; holding it meanwhile only costs memory.
    cache.delete(storeId);
    return undefined;
  }

  async function getInstallation(storeId: string, signal?: AbortSignal): Promise<Installation> {
    const cached = cachedInstallation(storeId);
    if (cached) return cached;
    const running = inFlight.get(storeId);
    if (running) return join(running, storeId, { kind: 'window' }, signal);
    if (pending.get(storeId)) return refreshOnce(storeId, { kind: 'window' }, signal);
    const inst = await load(storeId);
    if (fresh(inst)) return remember(inst);
    return refreshOnce(storeId, { kind: 'window' }, signal);
  }

  // startClaimed: a store the sweep claimed (its lease taken in the sweep's batch).
  const startClaimed = (inst: Installation, owner: string) =>
    track(inFlight, inst.storeId, () =>
      tracedRefresh(inst.storeId, () => lease.refreshClaimed(inst, owner)),
    );
  const sweeper = createSweep(core, { start, startClaimed, fresh, endpoint: lease });

  return {
    getInstallation,
    cachedInstallation,
    cachedTicket(storeId) {
      if (pending.get(storeId) !== undefined) return undefined;
      const hit = cache.peek(storeId);
      return hit !== undefined && usable(hit.ticket) ? hit.ticket : undefined;
    },
    stillCached(ticket) {
      // Any pending write sends the reader to the look-up (`cachedInstallation` reads it first).
      return pending.size() === 0 && usable(ticket);
    },
    lastRefreshFailure: () => lastFailure,
    pendingWrites: () => pending.size(),
    async flushPendingWrites() {
      if (pending.size() === 0) return 0;
      const left = await pending.flushAll();
      if (left > 0) {
        logger?.error(
          { event: 'refresh.pending_lost', pairs: left },
          'Refreshed tokens could not be stored before the kit closed; another instance refreshes these stores again within the platform grace period.',
        );
      }
      return left;
    },
    async getAccessToken(storeId, signal) {
      return (await getInstallation(storeId, signal)).accessToken;
    },
    async refreshRejected(storeId, rejectedToken, signal) {
      const trigger: Trigger = { kind: 'rejected', token: rejectedToken };
      let inst = await refreshOnce(storeId, trigger, signal);
      // We may have joined a refresh that started for another reason and kept this token.
      if (inst.accessToken === rejectedToken) inst = await refreshOnce(storeId, trigger, signal);
      return inst.accessToken;
    },
    async revoked(storeId, revokedToken) {
      cache.delete(storeId);
      let p = revoking.get(storeId);
      if (!p) {
        p = (async () => {
          const inst = await installations.get(storeId);
          if (!inst) return true;
          // A reinstall replaced the revoked token: keep the new installation.
          if (inst.accessToken !== revokedToken) return false;
          // Flagged already, by a call whose 401 came back earlier: once is enough.
          if (inst.needsReauth) return true;
          // Flag only the version that held the revoked token: a reinstall
          // committing meanwhile is never flagged (then replay with its token).
          if (!(await installations.markNeedsReauth(storeId, inst.version))) return false;
          cache.delete(storeId);
          logger?.warn(
            { event: 'installation.needs_reauth', storeId, reason: 'token_revoked' },
            'Token revoked by the platform: the installation needs re-authorisation (data kept).',
          );
          await deps.onRevoked?.(storeId);
          return true;
        })().finally(() => revoking.delete(storeId));
        revoking.set(storeId, p);
      }
      return p;
    },
    invalidate(storeId) {
      cache.delete(storeId);
      // A purge or a reinstall in this process supersedes a pair waiting to be stored.
      pending.drop(storeId);
    },
    reload(storeId, signal) {
      cache.delete(storeId);
      return getInstallation(storeId, signal);
    },
    sweep: () => sweeper.sweep(),
    startSweep: () => sweeper.startSweep(),
    stopSweep: () => sweeper.stopSweep(),
  };
}

/** Registers a refresh for single-flight (a request for the store joins it until it settles). */
function track(
  inFlight: RefreshCore['inFlight'],
  storeId: string,
  run: () => Promise<Installation | null>,
): Promise<Installation | null> {
  const p: Promise<Installation | null> = run().finally(() => {
    if (inFlight.get(storeId) === p) inFlight.delete(storeId);
  });
  inFlight.set(storeId, p);
  return p;
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new AbortedError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
