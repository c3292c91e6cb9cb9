/**
 * Options of the token manager (automatic refresh). `storeApp()` composes these
 * under `refresh`; `resolveRefreshOptions` validates them once and fills defaults.
 */
import * as v from 'valibot';
import { ConfigError } from '../errors/index.js';
import { integer, parseOptions } from '../options/index.js';

export const refreshOptionsSchema = v.strictObject({
  /**
   * A token expiring within this many seconds is refreshed before use, and the
   * sweep refreshes idle stores' tokens this long before they expire.
   * @default 300
   */
  windowSeconds: v.optional(integer(0), 300),
  /**
   * How often the background sweep looks for tokens expiring within the window,
   * in milliseconds. 0 disables the sweep.
   * @default 60000
   */
  sweepIntervalMs: v.optional(integer(0), 60_000),
  /**
   * Due installations read from the database per query. A sweep pass reads
   * page after page until nothing due is left, so this sets the size of a
   * read, not how many stores a pass refreshes. On the built-in SQLite and
   * Postgres a read also takes the rows' refresh leases (one statement), and
   * is at most this and at least twice the refreshes running at once (16
   * or more), so claimed stores never wait long under their lease.
   * @default 500
   */
  sweepBatchSize: v.optional(integer(1), 500),
  /**
   * Refreshes a sweep pass runs at once while it keeps up. With ~20 ms per
   * refresh (token endpoint round trip and two writes) this does about 400 a
   * second. The pass also waits out the token endpoint's Retry-After before
   * its next call.
   * @default 8
   */
  sweepConcurrency: v.optional(integer(1, 256), 8),
  /**
   * Most refreshes a sweep pass runs at once when it falls behind: when a
   * token it refreshes had less than half the window left (many tokens due,
   * or a slow token endpoint), the pass doubles its concurrency, up to this;
   * a Retry-After or a failed call from the token endpoint halves it again,
   * down to `sweepConcurrency`. Equal to `sweepConcurrency` turns this off.
   * Must be at least `sweepConcurrency`.
   * @default 64
   */
  sweepMaxConcurrency: v.optional(integer(1, 1024), 64),
  /**
   * How long one process may hold the cross-process refresh lease; a crashed
   * holder's lease expires after this.
   * @default 30000
   */
  leaseMs: v.optional(integer(100), 30_000),
  /**
   * How often a process that lost the lease re-reads the installation, in milliseconds.
   * @default 100
   */
  pollIntervalMs: v.optional(integer(1), 100),
  /**
   * Attempts at the token endpoint when it is unreachable or answers 5xx.
   * @default 3
   */
  maxAttempts: v.optional(integer(1), 3),
  /**
   * First backoff delay between refresh attempts (doubles, with jitter), in milliseconds.
   * @default 200
   */
  baseDelayMs: v.optional(integer(0), 200),
  /**
   * Longest wait between writes of a refreshed token pair whose first write
   * failed (disk full, connection lost), in milliseconds. The pair is kept in
   * memory (encrypted) and served meanwhile; retries start at `baseDelayMs`
   * and double up to this.
   * @default 5000
   */
  storeRetryMaxDelayMs: v.optional(integer(100), 5_000),
  /**
   * How long a decrypted installation is kept in memory, so a request with a
   * valid token reads no database row, in milliseconds. Entries are dropped on
   * refresh, reauth and purge in this process; another process's refresh is seen
   * on a 401 or when the entry ages out (which bounds how long an uninstall
   * handled elsewhere goes unnoticed). 0 disables the cache.
   * @default 30000
   */
  cacheTtlMs: v.optional(integer(0), 30_000),
  /**
   * Installations kept in that memory at most; beyond it the least recently
   * used is dropped (and read from the database again on its next request).
   * One cached store costs about 1 KB of heap (docs/architecture.md, "Where
   * per-store state lives"), so the default bounds the cache near 10 MB
   * however many stores are installed.
   * @default 10000
   */
  cacheMaxStores: v.optional(integer(1), 10_000),
});

export type RefreshOptions = v.InferInput<typeof refreshOptionsSchema>;

export type ResolvedRefreshOptions = v.InferOutput<typeof refreshOptionsSchema>;

/** Validates once and fills every default; throws ConfigError naming the option. */
export function resolveRefreshOptions(
  options: RefreshOptions = {},
  prefix = 'refresh',
): ResolvedRefreshOptions {
  const resolved = parseOptions(refreshOptionsSchema, options, { prefix });
  if (resolved.sweepMaxConcurrency < resolved.sweepConcurrency) {
    throw new ConfigError(
      `${prefix}.sweepMaxConcurrency`,
      `must be at least ${prefix}.sweepConcurrency (${resolved.sweepConcurrency}); raise it or lower ${prefix}.sweepConcurrency`,
    );
  }
  return resolved;
}
