/**
 * The storage contract every other module codes against. Implementations live
 * beside this file (SQLite via better-sqlite3, Postgres via pg, both through
 * Drizzle); one shared test suite runs against both.
 *
 * Rules every implementation keeps:
 * - Tokens are encrypted before they reach the database and decrypted after
 *   they leave it (compact JWE, see src/crypto). Nothing outside storage ever
 *   sees ciphertext; nothing inside the database ever holds plaintext.
 * - A database failure throws StorageError (src/errors), never returns null.
 * - Every method is safe to call from several processes on one database.
 */
import type { Store as SessionStore } from 'express-session';

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

/** Pending OAuth state, kept server-side between /auth and /auth/callback. */
export interface OAuthStateRecord {
  state: string;
  codeVerifier: string;
  /** The store the install began for, when the begin named one. */
  storeId: string | null;
  /** Random value also set in the browser's top-level SameSite=Lax cookie. */
  browserBinding: string;
  /** Set when the callback restarted the install after invalid_grant (no loops). */
  retried: boolean;
  /** Where to send the merchant afterwards (an app-relative path), if any. */
  returnTo: string | null;
  expiresAt: Date;
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
  /** Every installation's store id, for re-encryption and admin listings. */
  listStoreIds(): Promise<string[]>;
  /** Re-encrypt one row's tokens with the newest key (rotate-keys). Returns true if it changed. */
  reencrypt(storeId: string): Promise<boolean>;
  /**
   * Delete the installation row only (tokens gone; sessions and app rows kept).
   * Returns true if a row was deleted. For "uninstall everything" use `purge`.
   */
  delete(storeId: string): Promise<boolean>;
}

export interface OAuthStateRepository {
  create(record: OAuthStateRecord): Promise<void>;
  /** Atomically read and delete (single use). Expired records return null. */
  consume(state: string): Promise<OAuthStateRecord | null>;
  deleteExpired(now: Date): Promise<number>;
  /**
   * Re-encrypt every pending record with the newest key (rotate-keys). Records
   * that cannot be decrypted (key removed) are skipped and counted in `failed`.
   */
  reencryptAll(): Promise<{ scanned: number; changed: number; failed: number }>;
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

export interface PurgeCounts {
  /** Rows deleted per table name, kit tables and the app's own. */
  [table: string]: number;
}

export interface PurgeOptions {
  /** The app's own store-scoped tables. */
  tables: readonly StoreScopedTable[];
  /** Runs inside the purge transaction for anything else the app holds. */
  onPurge?: (storeId: string, tx: AnyDrizzle) => Promise<void> | void;
  /**
   * Only purge if the installation was installed at or before this instant: an
   * uninstall event older than a reinstall must not delete the new install.
   * Compared with `platformInstalledAt` when the row has one (both in the
   * platform's clock), else with `installedAt`.
   */
  ifInstalledBefore?: Date;
}

export interface PurgeResult {
  /** false when skipped because a newer installation exists. */
  purged: boolean;
  counts: PurgeCounts;
  /**
   * Whether the deleted bytes were also scrubbed from disk after the commit
   * (SQLite: WAL checkpoint TRUNCATE; Postgres: VACUUM of the touched tables).
   * false when that step failed (logged; the rows are deleted either way).
   */
  scrubbed?: boolean;
}

/** An uninstall's purge not yet done (the purge outbox). */
export interface PendingPurge {
  eventId: string;
  storeId: string;
  /** The uninstall's own time (platform clock). */
  eventAt: Date;
  createdAt: Date;
  attempts: number;
  nextAttemptAt: Date;
  /** Error code of the last failed attempt. */
  lastError: string | null;
}

export interface PendingPurgeRepository {
  /**
   * Record a pending purge. Call inside `webhooks.runOnce`'s effects so it
   * commits with the dedupe row or not at all. A second add of one event is a no-op.
   */
  add(entry: { eventId: string; storeId: string; eventAt: Date }): Promise<void>;
  /** Every pending purge, oldest first. */
  list(): Promise<PendingPurge[]>;
  /** Pending purges whose next attempt is due at `now`, oldest first. */
  due(now: Date, limit: number): Promise<PendingPurge[]>;
  /** An attempt failed: count it and schedule the next one. */
  recordFailure(eventId: string, nextAttemptAt: Date, errorCode: string): Promise<void>;
  /** The purge is done: forget it. */
  complete(eventId: string): Promise<void>;
}

export interface WebhookRepository {
  /**
   * Run `effects` inside one transaction together with recording `webhookId`.
   * If the id was already recorded, `effects` does not run and the result is
   * `{ duplicate: true }`. Concurrent deliveries of one id run effects once.
   */
  runOnce<T>(
    webhookId: string,
    topic: string,
    effects: (tx: AnyDrizzle) => Promise<T>,
  ): Promise<{ duplicate: true } | { duplicate: false; result: T }>;
  /** Forget delivery ids received before `before` (older than any redelivery). Returns rows deleted. */
  pruneDeliveries(before: Date): Promise<number>;
}

/** Options of `Storage.sessionStore()`. */
export interface SessionStoreOptions {
  /**
   * Lifetime of a session whose cookie has no expiry, in milliseconds.
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
  readonly dialect: Dialect;
  /** The Drizzle handle, so the app can keep its own tables in the same database. */
  readonly db: AnyDrizzle;
  readonly installations: InstallationRepository;
  readonly oauthStates: OAuthStateRepository;
  readonly webhooks: WebhookRepository;
  /** The purge outbox (see PendingPurgeRepository). */
  readonly pendingPurges: PendingPurgeRepository;
  /** An express-session store on the same database (never MemoryStore). */
  sessionStore(options?: SessionStoreOptions): SessionStore;
  /**
   * One transaction across kit and app tables. On SQLite, transactions are
   * serialised in-process (better-sqlite3 is synchronous) and take the write
   * lock with BEGIN IMMEDIATE.
   */
  transaction<T>(fn: (tx: AnyDrizzle) => Promise<T>): Promise<T>;
  /**
   * Delete everything held for the store in one transaction: installation and
   * tokens, sessions of the store, pending OAuth state for it, the app's
   * store-scoped rows; then write one audit row (store id, time, counts).
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
  /** Apply pending migrations (run at start unless the app opts out). */
  migrate(): Promise<void>;
  close(): Promise<void>;
}
