/**
 * The storage every other module of the kit codes against: ./sealed.ts builds
 * it on any StorageAdapter (./contract.ts, the public seam), adding token
 * encryption, input checks and the session store.
 *
 * Rules:
 * - Tokens are encrypted before they reach the adapter and decrypted after
 *   they leave it (compact JWE, see src/crypto). Nothing outside storage ever
 *   sees ciphertext; no adapter ever sees plaintext.
 * - A database failure throws StorageError (src/errors), never returns null.
 * - Every method is safe to call from several processes on one database.
 */

import type { KitSessionStore } from '../core/session-store.js';
import type {
  PendingPurgeEntry,
  PendingPurgeLease,
  PendingPurgeRecord,
  PurgeResult,
} from './contract.js';

export type { PurgeCounts, PurgeResult } from './contract.js';

export type Dialect = 'sqlite' | 'postgres' | 'mysql';

/** One merchant store's installation of this app, tokens decrypted. */
export interface Installation {
  storeId: string;
  /** Scopes the merchant granted (from the token response's `scope`). */
  scopes: string[];
  accessToken: string;
  /** null when the platform issued none. */
  refreshToken: string | null;
  accessTokenExpiresAt: Date;
  installedAt: Date;
  updatedAt: Date;
  /** Bumped on every write of tokens; the compare-and-swap handle for refresh. */
  version: number;
  /**
   * Set when the platform refused the grant for good (refresh `invalid_grant`,
   * `token_revoked` on a call): the merchant must install again. Data is kept.
   */
  needsReauth: boolean;
  /**
   * When the platform issued this installation's tokens, in the platform's own
   * clock (the token response's `Date` header); uninstall events are compared
   * with it. null when unknown (older rows, no `Date` header).
   */
  platformInstalledAt: Date | null;
}

/** What an install records besides its tokens. */
export interface InstallMetadata {
  /** See Installation.platformInstalledAt. @default null */
  platformInstalledAt?: Date | null;
}

/** What an install or a refresh hands to storage. */
export interface TokenSet {
  scopes: string[];
  accessToken: string;
  refreshToken: string | null;
  accessTokenExpiresAt: Date;
}

export interface InstallationRepository {
  get(storeId: string): Promise<Installation | null>;
  list(): Promise<Installation[]>;
  /**
   * Install or reinstall: replaces tokens and scopes in place, sets
   * installedAt to now, clears needsReauth and any refresh lease, bumps version.
   */
  upsert(storeId: string, tokens: TokenSet, metadata?: InstallMetadata): Promise<Installation>;
  /**
   * Take the refresh lease if the row is still at `expectedVersion` and no
   * other owner holds an unexpired lease. Returns false when someone else
   * holds it or the version moved (re-read and use their tokens).
   */
  acquireRefreshLease(
    storeId: string,
    expectedVersion: number,
    owner: string,
    leaseMs: number,
  ): Promise<boolean>;
  /**
   * Commit refreshed tokens if `owner` still holds the lease; bumps version and
   * clears the lease. Returns the new row, or null when the lease was lost.
   */
  completeRefresh(storeId: string, owner: string, tokens: TokenSet): Promise<Installation | null>;
  /** Give the lease back without changing tokens (refresh failed transiently). */
  releaseRefreshLease(storeId: string, owner: string): Promise<void>;
  /**
   * Refresh failed for good: keep the row, flag it, clear the lease. With
   * `expectedVersion`, flag only if the row is still at that version, so a
   * reinstall that landed meanwhile is never flagged. Returns true if flagged.
   */
  markNeedsReauth(storeId: string, expectedVersion?: number): Promise<boolean>;
  /** Store ids whose access token expires before `before` (for the background sweep). */
  listExpiringBefore(before: Date, limit: number): Promise<string[]>;
  /**
   * Optional (storages that can: the built-in SQLite and Postgres): take the
   * refresh lease for `owner` (`leaseMs`, in the database's clock) on up to
   * `limit` installations expiring before `before` whose lease is free (but
   * none of `exclude`), in one statement, and return them, soonest expiry
   * first. The sweep's batch.
   */
  claimDueForRefresh?(
    before: Date,
    limit: number,
    owner: string,
    leaseMs: number,
    exclude: readonly string[],
  ): Promise<Installation[]>;
  /** Every installation's store id, for re-encryption and admin listings. */
  listStoreIds(): Promise<string[]>;
  /**
   * Re-encrypt one row's tokens with the newest key (rotate-keys), under the
   * refresh lease so a refresh landing meanwhile is never overwritten.
   * Returns true if it changed.
   */
  reencrypt(storeId: string): Promise<boolean>;
}

/** A Drizzle database handle of the active dialect, for the app's own tables. */
// biome-ignore lint/suspicious/noExplicitAny: the concrete Drizzle type depends on the dialect chosen at run time.
export type AnyDrizzle = any;

/**
 * A Drizzle table the app owns whose rows belong to one store. It must have a
 * column named `store_id` (the property name may differ; the SQL name may not).
 */
// biome-ignore lint/suspicious/noExplicitAny: any Drizzle table of either dialect.
export type StoreScopedTable = any;

export interface PurgeOptions {
  /** The app's own store-scoped tables (built-in dialects only). */
  tables: readonly StoreScopedTable[];
  /**
   * Runs inside the purge transaction for anything else the app holds; `tx`
   * is the adapter's transaction handle (Drizzle on the built-in dialects).
   */
  onPurge?: (storeId: string, tx: AnyDrizzle) => Promise<void> | void;
  /**
   * Only purge if the installation was installed at or before this instant: an
   * uninstall event older than a reinstall must not delete the new install.
   * Compared with `platformInstalledAt` when the row has one (both in the
   * platform's clock), else with `installedAt`.
   */
  ifInstalledBefore?: Date;
  /** The second pass after a committed purge (see AdapterPurgeOptions.sweep). */
  sweep?: boolean;
  /** Called once the purge's transaction committed (or skipped), before the scrub. */
  onCommitted?: () => void;
  /** The outbox entry to settle in the purge's own transaction (see AdapterPurgeOptions.outbox). */
  outbox?: { eventId: string; sweepAfterMs: number };
}

/** An uninstall's purge not yet done (the purge outbox). */
export type PendingPurge = PendingPurgeRecord;

export interface PendingPurgeRepository {
  /**
   * Record a pending purge outside a delivery (a redelivery re-arming it);
   * inside `webhooks.runOnce` use the delivery's `addPendingPurge`. A second
   * add of one event is a no-op.
   */
  add(entry: PendingPurgeEntry): Promise<void>;
  /** Every pending purge (kind 'purge'; scheduled sweeps are not pending purges), oldest first. */
  list(): Promise<PendingPurge[]>;
  /** Entries (purges and sweeps) whose next attempt is due at `now`, oldest first. */
  due(now: Date, limit: number): Promise<PendingPurge[]>;
  /** The entry of `eventId` (purge or sweep), or null. */
  get(eventId: string): Promise<PendingPurge | null>;
  /** Lease due, unleased entries (see PurgeOutboxAdapter.lease). */
  lease(lease: PendingPurgeLease): Promise<PendingPurge[]>;
  /** An attempt failed: count it, schedule the next one, free the lease. */
  recordFailure(eventId: string, nextAttemptAt: Date, errorCode: string): Promise<void>;
  /** The purge (or sweep) is done: forget it, or with `sweepAt` keep it as a sweep due then. */
  complete(eventId: string, sweepAt?: Date): Promise<void>;
}

export interface WebhookRepository {
  /**
   * Run `effects` inside one transaction together with recording `webhookId`.
   * If the id was already recorded, `effects` does not run and the result is
   * `{ duplicate: true }`. Concurrent deliveries of one id run effects once.
   * `delivery.addPendingPurge` writes the purge outbox in that transaction.
   */
  runOnce<T>(
    webhookId: string,
    topic: string,
    effects: (
      tx: AnyDrizzle,
      delivery: { addPendingPurge(entry: PendingPurgeEntry): Promise<void> },
    ) => Promise<T>,
  ): Promise<{ duplicate: true } | { duplicate: false; result: T }>;
  /** Forget delivery ids received before `before` (older than any redelivery). Returns rows deleted. */
  pruneDeliveries(before: Date): Promise<number>;
}

/** Options of `Storage.sessions()`. */
export interface SessionStoreOptions {
  /**
   * Lifetime of a session stored without one, in milliseconds.
   * @default 86_400_000 (1 day)
   */
  defaultTtlMs?: number;
  /**
   * How often expired sessions are deleted, in milliseconds; 0 disables it.
   * @default 900_000 (15 minutes)
   */
  pruneIntervalMs?: number;
}

export interface Storage {
  /** The built-in dialect, or 'custom' for the app's own StorageAdapter. */
  readonly dialect: Dialect | 'custom';
  /**
   * The Drizzle handle, so the app can keep its own tables in the same
   * database (built-in dialects; undefined with a custom adapter).
   */
  readonly db: AnyDrizzle;
  readonly installations: InstallationRepository;
  readonly webhooks: WebhookRepository;
  /** The purge outbox (see PendingPurgeRepository). */
  readonly pendingPurges: PendingPurgeRepository;
  /**
   * The browser sessions on the same database (never MemoryStore), as the kit's
   * session-store port; the Express shell adapts it to express-session.
   */
  sessions(options?: SessionStoreOptions): KitSessionStore & {
    /** Deletes expired sessions now. Returns how many. */
    prune(now?: Date): Promise<number>;
  };
  /**
   * One transaction across kit and app tables (built-in dialects; a custom
   * adapter rejects with ConfigError). On SQLite, transactions are
   * serialised in-process (better-sqlite3 is synchronous) and take the write
   * lock with BEGIN IMMEDIATE.
   */
  transaction<T>(fn: (tx: AnyDrizzle) => Promise<T>): Promise<T>;
  /**
   * Delete everything held for the store in one transaction: installation and
   * tokens, sessions of the store, the app's store-scoped rows (built-in
   * dialects) and whatever `onPurge` deletes; then write one audit row
   * (store id, time, counts).
   * Idempotent; other stores untouched.
   */
  purge(storeId: string, options: PurgeOptions): Promise<PurgeResult>;
  /**
   * Claim `id` within `namespace` until `expiresAt`, atomically across every
   * process on the database: true for the one caller that got it, false while
   * an unexpired claim exists (an expired one can be claimed again). Used to
   * make launch tokens single-use. Throws StorageError when the database fails.
   * Expired claims are pruned as a side effect.
   */
  claimOnce(namespace: string, id: string, expiresAt: Date): Promise<boolean>;
  /**
   * The database's clock (estimated between readings, see ./clock.ts), in
   * which leases, due times, outbox schedules and the purge horizon are
   * decided; the instance's own clock with an adapter that has no `clock()`.
   */
  now(): Promise<Date>;
  /** Apply pending migrations (run at start unless the app opts out). */
  migrate(): Promise<void>;
  close(): Promise<void>;
}
