/**
 * The types the token manager's parts share (./manager.ts, ./lease-refresh.ts,
 * ./sweep.ts): what a refresh call returns, the logger, a sweep pass's result, and
 * why and how a refresh runs.
 */
import type { Lru } from '../cache/lru.js';
import type { Installation, InstallationRepository } from '../storage/types.js';
import type { ResolvedRefreshOptions } from './options.js';
import type { PendingWrites } from './pending-writes.js';

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
  debug(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
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

/** Why a refresh runs: the token nears its expiry, or the platform rejected `token`. */
export type Trigger = { kind: 'window' } | { kind: 'rejected'; token: string };

/**
 * 'wait': a caller needs the token, so a process that loses the lease waits for
 * the winner. 'sweep': the background sweep only needs the refresh to happen,
 * so it leaves a leased store to its holder (answers null) and does not put
 * the installation into the request cache (a pass over 100,000 stores would
 * push out the stores that serve requests).
 */
export type Mode = 'wait' | 'sweep';

/** A cached installation, and its ticket: when it was read, and whether it is still the cache's. */
export interface CacheEntry {
  installation: Installation;
  /** What a reader keeps to tell later that this entry still stands (see `CacheTicket`). */
  ticket: CacheTicket;
}

/**
 * A cached installation's standing, as numbers, for a reader that keeps what it built
 * from the installation between requests (the in-memory `authenticate`): it asks
 * `TokenManager.stillCached(ticket)` instead of looking the store up again. `live`
 * turns false once the entry leaves the cache (replaced, invalidated, evicted). It
 * holds nothing of the installation: no token outlives the cache's copy through it.
 */
export interface CacheTicket {
  live: boolean;
  /** When the entry was read (local ms). */
  readonly loadedAt: number;
  /** The installation's access-token expiry (platform ms). */
  readonly expiresAtMs: number;
}

/** What a token manager's parts share: its storage, options, clock and in-memory state. */
export interface RefreshCore {
  installations: InstallationRepository;
  options: ResolvedRefreshOptions;
  logger: RefreshLogger | undefined;
  now(): number;
  /** The platform's clock (from its `Date` headers): token expiries are stored and compared in it. */
  platformNow(): number;
  /** `options.windowSeconds` in ms: a token closer to its expiry is refreshed. */
  windowMs: number;
  /** The request path's installation cache (LRU, `refresh.cacheMaxStores`). */
  cache: Lru<string, CacheEntry>;
  /** Refreshes under way in this process; null: a sweep's attempt left the store to another process. */
  inFlight: Map<string, Promise<Installation | null>>;
  /**
   * Installations returned by a refresh this process committed, with the
   * expiry (ms) of the token they replaced: the sweep counts them and reads
   * how close to expiry it got (its pacing).
   */
  committedHere: WeakMap<Installation, number>;
  /** Pairs the platform issued whose write failed: kept, served and retried (./pending-writes.ts). */
  pending: PendingWrites;
}
