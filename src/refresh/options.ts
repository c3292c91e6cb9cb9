/**
 * Options of the token manager (automatic refresh). `storeApp()` composes these
 * under `refresh`; `resolveRefreshOptions` validates them once and fills defaults.
 */
import { positiveInt as int } from '../client/options.js';

export interface RefreshOptions {
  /**
   * A token expiring within this many seconds is refreshed before use, and the
   * sweep refreshes idle stores' tokens this long before they expire.
   * @default 300
   */
  windowSeconds?: number;
  /**
   * How often the background sweep looks for tokens expiring within the window,
   * in milliseconds. 0 disables the sweep.
   * @default 60000
   */
  sweepIntervalMs?: number;
  /**
   * Installations refreshed per sweep tick at most.
   * @default 100
   */
  sweepBatchSize?: number;
  /**
   * How long one process may hold the cross-process refresh lease; a crashed
   * holder's lease expires after this.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How often a process that lost the lease re-reads the installation, in milliseconds.
   * @default 100
   */
  pollIntervalMs?: number;
  /**
   * Attempts at the token endpoint when it is unreachable or answers 5xx.
   * @default 3
   */
  maxAttempts?: number;
  /**
   * First backoff delay between refresh attempts (doubles, with jitter), in milliseconds.
   * @default 200
   */
  baseDelayMs?: number;
  /**
   * How long a decrypted installation is kept in memory, so a request with a
   * valid token reads no database row, in milliseconds. Entries are dropped on
   * refresh, reauth and purge in this process; another process's refresh is seen
   * on a 401 or when the entry ages out (which bounds how long an uninstall
   * handled elsewhere goes unnoticed). 0 disables the cache.
   * @default 30000
   */
  cacheTtlMs?: number;
}

export type ResolvedRefreshOptions = Required<RefreshOptions>;

/** Validates once and fills every default; throws ConfigError naming the option. */
export function resolveRefreshOptions(
  options: RefreshOptions = {},
  prefix = 'refresh',
): ResolvedRefreshOptions {
  return {
    windowSeconds: int(`${prefix}.windowSeconds`, options.windowSeconds, 300, 0),
    sweepIntervalMs: int(`${prefix}.sweepIntervalMs`, options.sweepIntervalMs, 60_000, 0),
    sweepBatchSize: int(`${prefix}.sweepBatchSize`, options.sweepBatchSize, 100, 1),
    leaseMs: int(`${prefix}.leaseMs`, options.leaseMs, 30_000, 100),
    pollIntervalMs: int(`${prefix}.pollIntervalMs`, options.pollIntervalMs, 100, 1),
    maxAttempts: int(`${prefix}.maxAttempts`, options.maxAttempts, 3, 1),
    baseDelayMs: int(`${prefix}.baseDelayMs`, options.baseDelayMs, 200, 0),
    cacheTtlMs: int(`${prefix}.cacheTtlMs`, options.cacheTtlMs, 30_000, 0),
  };
}
