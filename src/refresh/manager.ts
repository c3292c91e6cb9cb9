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
import { randomUUID } from 'node:crypto';
import { createOutageBackoff } from '../background/outage-backoff.js';
import { createLru } from '../cache/lru.js';
import { AbortedError, NotInstalledError, ReauthorizationRequiredError } from '../client/errors.js';
import { sleep } from '../client/ratelimit.js';
import type { TokenSource } from '../client/transport.js';
import { StoreAppError } from '../errors/index.js';
import { OAUTH_ENV } from '../oauth/env.js';
import type { Installation, InstallationRepository, TokenSet } from '../storage/types.js';
import { ATTR, countRefresh, errorType, inSpan, SPAN } from '../telemetry/index.js';
import type { ResolvedRefreshOptions } from './options.js';
import { createSweepPacer } from './pacer.js';
import { createPendingWrites } from './pending-writes.js';

/** Lifetime assumed when a refresh response has no usable expires_in (the document's value). */
const DEFAULT_EXPIRES_IN_SECONDS = 86_400;
/** A longer expires_in is a broken response; trusting it would stop proactive refresh. */
const MAX_EXPIRES_IN_SECONDS = 366 * 86_400;

import {
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  RefreshClientRejectedError,
  RefreshUnavailableError,
} from './errors.js';

export {
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  RefreshClientRejectedError,
  RefreshUnavailableError,
};

/** What a refresh call returns (the oauth module's TokenResponse fits). */
export interface RefreshedTokens {
  accessToken: string;
  /** null or missing: keep the old refresh token. */
  refreshToken?: string | null;
  /** Seconds; missing or invalid: the document's 86400. */
  expiresIn?: number | null;
  scopes?: string[] | null;
  /** True when the response had no `scope`: keep the old scopes. */
  scopeMissing?: boolean;
  /** The response's `Date` (the platform's clock): the expiry counts from it. */
  serverDate?: Date | null;
}

/** Calls the token endpoint with grant_type=refresh_token. */
export type RefreshCall = (refreshToken: string, signal?: AbortSignal) => Promise<RefreshedTokens>;

export interface RefreshLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

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

export interface SweepResult {
  /** Due installations this pass looked at. */
  checked: number;
  /** Refreshes this process committed. */
  refreshed: number;
  failed: number;
  /**
   * Due installations another process was refreshing (its lease won the
   * compare-and-swap): skipped, not waited for. The work wasted on sharing a
   * sweep between instances is these attempts' read and lease try, never a
   * second refresh.
   */
  leaseLost: number;
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
   * One pass of the sweep: refreshes every installation expiring within the
   * window, `sweepConcurrency` at a time, reading due ids page by page until
   * none is left (failures and stores leased by another process are skipped
   * for the rest of the pass).
   */
  sweep(): Promise<SweepResult>;
  /** Start the background sweep (an unref'd interval). Idempotent. */
  startSweep(): void;
  stopSweep(): Promise<void>;
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

/** `refreshLeased`'s answer when another process's tokens replaced ours (re-read, use theirs). */
const LOST_LEASE = Symbol('lost lease');

interface CacheEntry {
  installation: Installation;
  loadedAt: number;
}

type Trigger = { kind: 'window' } | { kind: 'rejected'; token: string };

/**
 * 'wait': a caller needs the token, so a process that loses the lease waits for
 * the winner. 'sweep': the background sweep only needs the refresh to happen,
 * so it leaves a leased store to its holder (answers null) and does not put
 * the installation into the request cache (a pass over 100,000 stores would
 * push out the stores that serve requests).
 */
type Mode = 'wait' | 'sweep';

/** A swept store: 'ok' (nothing to learn), its refresh landed with `leftMs` to spare, or the endpoint failed. */
type SweepOutcome = 'ok' | 'endpoint_failed' | { leftMs: number };

/** Consecutive endpoint failures after which a sweep pass stops (the endpoint is down). */
const SWEEP_GIVE_UP_AFTER = 20;
/** A pass skips at most this many pages' worth of failed or leased stores, then ends. */
const SWEEP_SKIP_PAGES = 10;
/**
 * Longest Retry-After a refresh waits out itself before its next attempt; a
 * longer one fails the refresh now (REFRESH_UNAVAILABLE: a request answers 503,
 * the sweep pauses until then), rather than hold a request for minutes.
 */
const MAX_INLINE_RETRY_AFTER_MS = 5_000;

function isInvalidGrant(err: unknown): boolean {
  return err instanceof StoreAppError && err.code === 'invalid_grant';
}

function isInvalidClient(err: unknown): boolean {
  return err instanceof StoreAppError && err.code === 'invalid_client';
}

function isRetryable(err: unknown): boolean {
  if (err instanceof StoreAppError && (err as { retryable?: unknown }).retryable === true) {
    return true;
  }
  return err instanceof StoreAppError && err.code === 'TOKEN_ENDPOINT_UNAVAILABLE';
}

export function createTokenManager(deps: TokenManagerDeps): TokenManager {
  const { installations, options, logger } = deps;
  const now = deps.now ?? Date.now;
  // Expiries are the platform's timestamps: one clock, the platform's.
  const platformNow = deps.platformNow ?? now;
  const windowMs = options.windowSeconds * 1000;
  // Bounded (LRU): memory does not grow with the number of installed stores.
  const cache = createLru<string, CacheEntry>({ max: options.cacheMaxStores });
  /** null: a sweep's attempt left the store to another process's lease. */
  const inFlight = new Map<string, Promise<Installation | null>>();
  /** Local time before which the token endpoint asked not to be called (its Retry-After). */
  let endpointPausedUntil = 0;
  const revoking = new Map<string, Promise<boolean>>();
  /**
   * Installations returned by a refresh this process committed, with the
   * expiry (ms) of the token they replaced: the sweep counts them and reads
   * how close to expiry it got (its pacing).
   */
  const committedHere = new WeakMap<Installation, number>();
  /** Token endpoint answers asking to slow down (Retry-After) or failing, so far: the sweep backs off. */
  let endpointPushback = 0;
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<SweepResult> | undefined;
  let stopping: AbortController | undefined;
  /**
   * A wrong client secret fails every store's refresh: the operator hears it
   * once (at error level, naming the settings) until a refresh succeeds again,
   * not once per store and sweep.
   */
  let clientRejectedReported = false;
  let lastFailure: RefreshFailure | null = null;
  // Pairs the platform issued whose write failed: kept, served and retried (./pending-writes.ts).
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

  function fresh(inst: Installation): boolean {
    return inst.accessTokenExpiresAt.getTime() - platformNow() > windowMs;
  }

  function remember(inst: Installation, mode: Mode = 'wait'): Installation {
    // The sweep only replaces a copy already held; it never adds one.
    if (options.cacheTtlMs > 0 && (mode === 'wait' || cache.has(inst.storeId))) {
      cache.set(inst.storeId, { installation: inst, loadedAt: now() });
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

  async function callTokenEndpoint(
    storeId: string,
    refreshToken: string,
    signal?: AbortSignal,
  ): Promise<RefreshedTokens> {
    for (let attempt = 1; ; attempt++) {
      // The endpoint asked every caller to wait (an earlier answer's Retry-After).
      const paused = endpointPausedUntil - now();
      if (paused > MAX_INLINE_RETRY_AFTER_MS) {
        throw new RefreshUnavailableError(
          'The token endpoint asked to wait before the next refresh (Retry-After); try again later.',
        );
      }
      if (paused > 0) await sleep(paused, signal);
      try {
        return await deps.refresh(refreshToken, signal);
      } catch (err) {
        const asked = retryAfterMsOf(err);
        if (asked !== undefined) endpointPausedUntil = Math.max(endpointPausedUntil, now() + asked);
        if (asked !== undefined || isRetryable(err)) endpointPushback++;
        if (
          isRetryable(err) &&
          attempt < options.maxAttempts &&
          !signal?.aborted &&
          (asked === undefined || asked <= MAX_INLINE_RETRY_AFTER_MS)
        ) {
          const cap = options.baseDelayMs * 2 ** (attempt - 1);
          // The platform's Retry-After when it gave one (never longer), else a backoff.
          await sleep(asked ?? cap / 2 + Math.random() * (cap / 2), signal);
          continue;
        }
        // Refused client credentials are reported once, as an error naming the
        // settings (below); a warn per store and per sweep would bury it.
        if (!isInvalidClient(err)) {
          logger?.warn(
            { storeId, errorCode: err instanceof StoreAppError ? err.code : undefined, attempt },
            'Token refresh failed.',
          );
        }
        throw err;
      }
    }
  }

  function toTokenSet(old: Installation, r: RefreshedTokens): TokenSet {
    if (typeof r.accessToken !== 'string' || r.accessToken.length === 0) {
      throw new RefreshUnavailableError('The refresh response had no access token.');
    }
    const expiresIn =
      typeof r.expiresIn === 'number' &&
      Number.isFinite(r.expiresIn) &&
      r.expiresIn > 0 &&
      r.expiresIn <= MAX_EXPIRES_IN_SECONDS
        ? r.expiresIn
        : DEFAULT_EXPIRES_IN_SECONDS;
    const scopes =
      r.scopeMissing || !Array.isArray(r.scopes) || r.scopes.length === 0 ? old.scopes : r.scopes;
    return {
      accessToken: r.accessToken,
      refreshToken:
        typeof r.refreshToken === 'string' && r.refreshToken ? r.refreshToken : old.refreshToken,
      scopes,
      // Counted from when the platform issued it, in its clock (its Date, whole
      // seconds: at most one second early), else from our estimate of that clock.
      accessTokenExpiresAt: new Date(issuedAt(r) + expiresIn * 1000),
    };
  }

  function issuedAt(r: RefreshedTokens): number {
    const date = r.serverDate?.getTime();
    return date !== undefined && Number.isFinite(date) ? date : platformNow();
  }

  /** The cross-process part: read, lease, refresh, commit; or wait for the winner. */
  async function refreshUnderLease(
    storeId: string,
    trigger: Trigger,
    mode: Mode,
    signal?: AbortSignal,
  ): Promise<Installation | null> {
    const deadline = now() + options.leaseMs * 2 + 5_000;
    let lostTo: number | undefined;
    const waiting = await storePendingFirst(storeId, trigger);
    if (waiting) return waiting;
    for (;;) {
      const inst = await load(storeId);
      if (satisfied(inst, trigger)) return remember(inst, mode);
      // The version moved since we lost: the winner committed; its token is ours now.
      if (lostTo !== undefined && inst.version !== lostTo) return remember(inst, mode);
      if (!inst.refreshToken) {
        // A reinstall may have landed since the read: then re-read and use it.
        if (!(await installations.markNeedsReauth(storeId, inst.version))) continue;
        cache.delete(storeId);
        throw new ReauthorizationRequiredError(
          storeId,
          'The installation has no refresh token and its access token expired; send the merchant through /auth.',
        );
      }
      const owner = `${process.pid}:${randomUUID()}`;
      if (
        !(await installations.acquireRefreshLease(storeId, inst.version, owner, options.leaseMs))
      ) {
        // Another process is refreshing it: the sweep has other stores to do.
        if (mode === 'sweep') return null;
        lostTo ??= inst.version;
        if (now() > deadline) {
          throw new RefreshUnavailableError(
            'Another process holds the refresh lease and did not finish in time; try again.',
          );
        }
        await sleep(options.pollIntervalMs, signal);
        continue;
      }
      const refreshed = await refreshLeased(
        { storeId, inst, refreshToken: inst.refreshToken, owner },
        mode,
        signal,
      );
      if (refreshed !== LOST_LEASE) return refreshed;
      lostTo = inst.version;
    }
  }

  /**
   * Our last pair is not stored yet: its refresh token is the grant, the row's
   * is spent. Stores it first (never refreshing from the row meanwhile); the
   * pair when it still is not stored but serves the trigger.
   */
  async function storePendingFirst(
    storeId: string,
    trigger: Trigger,
  ): Promise<Installation | undefined> {
    if (!pending.get(storeId)) return undefined;
    await pending.flush(storeId);
    const waiting = pending.get(storeId);
    if (!waiting) return undefined;
    if (satisfied(waiting, trigger)) return waiting;
    throw new RefreshUnavailableError(
      'Refreshed tokens are waiting to be stored (the database refused the write); try again once it accepts writes.',
    );
  }

  /**
   * Holding the lease on `inst`: calls the token endpoint and commits the new
   * pair before anything uses it. LOST_LEASE when another process's tokens
   * replaced ours meanwhile (the caller re-reads and uses theirs).
   */
  async function refreshLeased(
    leased: { storeId: string; inst: Installation; refreshToken: string; owner: string },
    mode: Mode,
    signal?: AbortSignal,
  ): Promise<Installation | typeof LOST_LEASE> {
    const { storeId, inst, owner } = leased;
    let response: RefreshedTokens;
    try {
      response = await callTokenEndpoint(storeId, leased.refreshToken, signal);
    } catch (err) {
      return refreshRefused(storeId, inst, owner, err);
    }
    let tokens: TokenSet;
    try {
      tokens = toTokenSet(inst, response);
    } catch (err) {
      await installations.releaseRefreshLease(storeId, owner).catch(() => undefined);
      throw err;
    }
    // Commit before use: a crash from here on leaves the new tokens in the database.
    let committed: Installation | null;
    try {
      committed = await installations.completeRefresh(storeId, owner, tokens);
    } catch (err) {
      // The platform rotated the grant already: losing this pair would cost a
      // reinstall. Keep it (sealed), serve it, and write it when storage recovers.
      const kept = pending.keep(inst, owner, tokens, err);
      clientRejectedReported = false;
      committedHere.set(kept, inst.accessTokenExpiresAt.getTime());
      return kept;
    }
    // Our lease expired and another process took over.
    if (!committed) return LOST_LEASE;
    logger?.info({ storeId, version: committed.version }, 'Access token refreshed.');
    clientRejectedReported = false;
    committedHere.set(committed, inst.accessTokenExpiresAt.getTime());
    return remember(committed, mode);
  }

  /**
   * The token endpoint refused or failed: a refused grant flags the version we
   * refreshed from (LOST_LEASE if a newer one replaced it); anything else
   * releases the lease and throws what the caller can act on. Never a purge.
   */
  async function refreshRefused(
    storeId: string,
    inst: Installation,
    owner: string,
    err: unknown,
  ): Promise<typeof LOST_LEASE> {
    if (isInvalidGrant(err)) {
      // A reinstall, or a process that took over after our lease ran out, may have
      // replaced the grant meanwhile: flag only the version we refreshed from, else
      // re-read and use the newer tokens.
      if (!(await installations.markNeedsReauth(storeId, inst.version))) return LOST_LEASE;
      cache.delete(storeId);
      logger?.warn(
        { event: 'installation.needs_reauth', storeId, reason: 'invalid_grant' },
        'Refresh token refused (invalid_grant); the installation needs re-authorisation (data kept).',
      );
      throw new ReauthorizationRequiredError(storeId, undefined, { cause: err });
    }
    await installations.releaseRefreshLease(storeId, owner).catch(() => undefined);
    if (err instanceof StoreAppError && err.code === 'ABORTED') throw err;
    if (isInvalidClient(err)) throw clientRejected(storeId, err);
    throw new RefreshUnavailableError(
      'The access token could not be refreshed now (token endpoint unavailable); try again.',
      { cause: err },
    );
  }

  /** Our credentials, not the grant: never flag or purge the installation; logged once. */
  function clientRejected(storeId: string, err: unknown): RefreshClientRejectedError {
    const rejected = new RefreshClientRejectedError({ cause: err });
    if (!clientRejectedReported) {
      clientRejectedReported = true;
      logger?.error(
        {
          event: 'refresh.client_rejected',
          storeId,
          oauthError: 'invalid_client',
          settings: [OAUTH_ENV.clientSecret, OAUTH_ENV.clientId],
        },
        rejected.message,
      );
    }
    return rejected;
  }

  /**
   * One refresh in a span, counted by outcome: `refreshed` (this process
   * committed new tokens), `joined` (another process did), `reauth_required`,
   * `not_installed` or `failed`. Failures are kept for the health endpoint.
   */
  function tracedRefresh(
    storeId: string,
    trigger: Trigger,
    mode: Mode,
  ): Promise<Installation | null> {
    return inSpan(
      SPAN.refresh,
      { operation: 'refresh', attributes: () => ({ [ATTR.storeId]: storeId }) },
      async (span) => {
        let inst: Installation | null;
        try {
          inst = await refreshUnderLease(storeId, trigger, mode);
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
    const p = tracedRefresh(storeId, trigger, mode).finally(() => {
      inFlight.delete(storeId);
    });
    inFlight.set(storeId, p);
    return p;
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

  function usable(entry: CacheEntry): boolean {
    return now() - entry.loadedAt < options.cacheTtlMs && fresh(entry.installation);
  }

  function cachedInstallation(storeId: string): Installation | undefined {
    const waiting = pending.get(storeId);
    if (waiting) return fresh(waiting) ? waiting : undefined;
    const hit = cache.get(storeId);
    if (hit === undefined) return undefined;
    if (usable(hit)) return hit.installation;
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

  /** One due store in a sweep pass; adds to `result`, and to `skip` when it stays due. */
  async function sweepOne(
    storeId: string,
    result: SweepResult,
    skip: Set<string>,
    signal: AbortSignal | undefined,
  ): Promise<SweepOutcome> {
    // Paced against the token endpoint: not before the Retry-After it gave any refresh.
    const pause = endpointPausedUntil - now();
    if (pause > 0) await sleep(pause, signal);
    result.checked++;
    if (inFlight.has(storeId)) return 'ok'; // a request of this process is refreshing it
    try {
      const inst = await start(storeId, { kind: 'window' }, 'sweep');
      if (inst === null) {
        result.leaseLost++;
        skip.add(storeId);
        return 'ok';
      }
      // Count only refreshes this process made, not a winner's token it re-read.
      const replacedExpiry = committedHere.get(inst);
      if (replacedExpiry !== undefined) result.refreshed++;
      // A token issued for less than the window stays due: once per pass is enough.
      if (!fresh(inst)) skip.add(storeId);
      // How much of the window was left when its refresh landed (both in the platform's clock).
      return replacedExpiry === undefined ? 'ok' : { leftMs: replacedExpiry - platformNow() };
    } catch (err) {
      // One store failing (needs reinstall, endpoint down) must not stop the others.
      result.failed++;
      skip.add(storeId);
      if (!(err instanceof RefreshClientRejectedError)) {
        logger?.warn(
          { storeId, errorCode: err instanceof StoreAppError ? err.code : undefined },
          'Background refresh failed for a store.',
        );
      }
      return err instanceof RefreshUnavailableError || err instanceof RefreshClientRejectedError
        ? 'endpoint_failed'
        : 'ok';
    }
  }

  async function sweep(signal?: AbortSignal): Promise<SweepResult> {
    const result: SweepResult = { checked: 0, refreshed: 0, failed: 0, leaseLost: 0 };
    let failingInARow = 0;
    const pacer = createSweepPacer({
      min: options.sweepConcurrency,
      max: options.sweepMaxConcurrency,
      behindMs: windowMs / 2,
    });
    let pushbackSeen = endpointPushback;
    /**
     * Works one page of due stores, `pacer.limit` at a time; the limit moves
     * as refreshes land (see createSweepPacer), so workers are added or
     * retire between stores, never in the middle of one.
     */
    const runPage = (ids: string[], one: (id: string) => Promise<SweepOutcome>) =>
      new Promise<void>((resolve, reject) => {
        let next = 0;
        let active = 0;
        let failed = false;
        const more = () =>
          !failed && next < ids.length && failingInARow < SWEEP_GIVE_UP_AFTER && !signal?.aborted;
        const launch = () => {
          while (active < pacer.limit() && more()) {
            const id = ids[next++] as string;
            active++;
            one(id).then(
              (outcome) => {
                active--;
                if (endpointPushback !== pushbackSeen) {
                  pushbackSeen = endpointPushback;
                  pacer.pushback();
                } else if (outcome === 'endpoint_failed') {
                  pacer.pushback();
                } else if (outcome !== 'ok') {
                  pacer.landed(outcome.leftMs);
                }
                launch();
              },
              (err: unknown) => {
                active--;
                // Only the pass's own stop signal ends a wait here.
                if (signal?.aborted) {
                  launch();
                  return;
                }
                failed = true;
                reject(err);
              },
            );
          }
          if (active === 0) resolve();
        };
        launch();
      });
    // Entries past their age answer no request; without this they would wait for the bound.
    // (Due ones stay: this pass replaces them with their refreshed copy.)
    cache.prune((entry) => now() - entry.loadedAt >= options.cacheTtlMs);
    // Stores that stay due after this pass tried them (failed, or another process holds
    // their lease): not tried again until the next pass. Bounded: the pass ends first.
    const skip = new Set<string>();
    const maxSkip = options.sweepBatchSize * SWEEP_SKIP_PAGES;
    while (skip.size < maxSkip && failingInARow < SWEEP_GIVE_UP_AFTER && !signal?.aborted) {
      // Read now, not once per pass: what another instance refreshed meanwhile is gone.
      const ids = await installations.listExpiringBefore(
        new Date(platformNow() + windowMs),
        options.sweepBatchSize + skip.size,
      );
      const due = ids.filter((id) => !skip.has(id) && !inFlight.has(id));
      if (due.length === 0) break;
      // Instances sharing a database read the same page: each works it in its own order,
      // so they mostly meet at stores already done rather than race for the same lease.
      shuffle(due);
      await runPage(due, (id) =>
        sweepOne(id, result, skip, signal).then((outcome) => {
          failingInARow = outcome === 'endpoint_failed' ? failingInARow + 1 : 0;
          return outcome;
        }),
      );
    }
    if (failingInARow >= SWEEP_GIVE_UP_AFTER) {
      logger?.warn(
        { event: 'refresh.sweep_stopped', failed: result.failed },
        'The token endpoint kept failing; the sweep pass stopped and resumes at the next interval.',
      );
    }
    return result;
  }

  return {
    getInstallation,
    cachedInstallation,
    lastRefreshFailure: () => lastFailure,
    pendingWrites: () => pending.size(),
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
    sweep: () => sweep(),
    startSweep() {
      if (sweepTimer || options.sweepIntervalMs === 0) return;
      stopping = new AbortController();
      const { signal } = stopping;
      // A failing database pauses the sweep (doubling) instead of a pass every tick.
      const outage = createOutageBackoff({
        baseMs: options.sweepIntervalMs,
        maxMs: Math.max(options.sweepIntervalMs, 10 * 60_000),
      });
      sweepTimer = setInterval(() => {
        if (sweeping || !outage.ready()) return;
        sweeping = sweep(signal)
          .then((r) => {
            outage.record(undefined);
            return r;
          })
          .catch((err) => {
            outage.record(err);
            logger?.error(
              { errorCode: err instanceof StoreAppError ? err.code : undefined },
              'Background token sweep failed; will try again.',
            );
            return { checked: 0, refreshed: 0, failed: 1, leaseLost: 0 };
          })
          .finally(() => {
            sweeping = undefined;
          });
      }, options.sweepIntervalMs);
      // The sweep must never keep a process alive on its own.
      sweepTimer.unref();
    },
    async stopSweep() {
      if (sweepTimer) clearInterval(sweepTimer);
      sweepTimer = undefined;
      // A pass waiting out a long Retry-After ends now; refreshes under way finish.
      stopping?.abort();
      await sweeping;
    },
  };
}

/** The Retry-After (ms) a token endpoint error carries, if any. */
function retryAfterMsOf(err: unknown): number | undefined {
  const ms = (err as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** Fisher–Yates, in place. */
function shuffle<T>(xs: T[]): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
  }
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
