/**
 * One store's refresh across the processes sharing the database: read the
 * installation, take its lease (compare-and-swap on its `version`), call the token
 * endpoint (its Retry-After respected, retryable failures retried), commit the new
 * pair before anything uses it, or wait for the process that holds the lease.
 * Built by the token manager (./manager.ts), which adds single-flight, the cache
 * and the span.
 */
import { ReauthorizationRequiredError } from '../client/errors.js';
import { sleep } from '../client/ratelimit.js';
import { randomUUID } from '../crypto/primitives.js';
import { StoreAppError } from '../errors/index.js';
import { OAUTH_ENV } from '../oauth/env.js';
import type { Installation, TokenSet } from '../storage/types.js';
import { RefreshClientRejectedError, RefreshUnavailableError } from './errors.js';
import type { Mode, RefreshCall, RefreshCore, RefreshedTokens, Trigger } from './refresh-types.js';

/** The pid in a lease's owner (for whoever reads the row); `worker` where there is no process. */
const PROCESS_ID = (globalThis as { process?: { pid?: number } }).process?.pid ?? 'worker';

/** Lifetime assumed when a refresh response has no usable expires_in (the document's value). */
const DEFAULT_EXPIRES_IN_SECONDS = 86_400;
/** A longer expires_in is a broken response; trusting it would stop proactive refresh. */
const MAX_EXPIRES_IN_SECONDS = 366 * 86_400;

/** `refreshLeased`'s answer when another process's tokens replaced ours (re-read, use theirs). */
const LOST_LEASE = Symbol('lost lease');

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

/** The Retry-After (ms) a token endpoint error carries, if any. */
function retryAfterMsOf(err: unknown): number | undefined {
  const ms = (err as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** What the lease refresh uses of the token manager's installation cache. */
export interface CachedInstallations {
  /** Reads the installation (NotInstalledError, ReauthorizationRequiredError). */
  load(storeId: string): Promise<Installation>;
  /** Whether `inst` answers the trigger (a fresh token, not the rejected one). */
  satisfied(inst: Installation, trigger: Trigger): boolean;
  /** Caches `inst` (as `mode` allows) and returns it. */
  remember(inst: Installation, mode?: Mode): Installation;
}

/**
 * The lease refresh of one token manager: `refreshUnderLease`, and what the token
 * endpoint said about its pace (the sweep slows down on it).
 */
export function createLeaseRefresh(
  core: RefreshCore,
  refresh: RefreshCall,
  cached: CachedInstallations,
) {
  const { installations, options, logger, now, platformNow, pending, committedHere, cache } = core;
  const { load, satisfied, remember } = cached;
  /** Local time before which the token endpoint asked not to be called (its Retry-After). */
  let endpointPausedUntil = 0;
  /** Token endpoint answers asking to slow down (Retry-After) or failing, so far: the sweep backs off. */
  let endpointPushback = 0;
  /**
   * A wrong client secret fails every store's refresh: the operator hears it
   * once (at error level, naming the settings) until a refresh succeeds again,
   * not once per store and sweep.
   */
  let clientRejectedReported = false;

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
        return await refresh(refreshToken, signal);
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
      const owner = `${PROCESS_ID}:${randomUUID()}`;
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
   * A store the sweep claimed, its lease already ours (`claimDueForRefresh`):
   * refresh and commit under that lease. null when another process's tokens
   * replaced ours (our lease ran out and it took over): theirs stand.
   */
  async function refreshClaimed(
    inst: Installation,
    owner: string,
    signal?: AbortSignal,
  ): Promise<Installation | null> {
    const { storeId } = inst;
    if (!inst.refreshToken) {
      if (!(await installations.markNeedsReauth(storeId, inst.version))) return null;
      cache.delete(storeId);
      throw new ReauthorizationRequiredError(
        storeId,
        'The installation has no refresh token and its access token expired; send the merchant through /auth.',
      );
    }
    const refreshed = await refreshLeased(
      { storeId, inst, refreshToken: inst.refreshToken, owner },
      'sweep',
      signal,
    );
    return refreshed === LOST_LEASE ? null : refreshed;
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
    // Routine, once per store and token lifetime: a debug line (a sweep pass sums up at info).
    logger?.debug({ storeId, version: committed.version }, 'Access token refreshed.');
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

  return {
    refreshUnderLease,
    refreshClaimed,
    /** Local time before which the token endpoint asked not to be called. */
    pausedUntil: () => endpointPausedUntil,
    /** Answers so far that asked to slow down (Retry-After) or failed. */
    pushback: () => endpointPushback,
  };
}
