/**
 * The public storage seam (`store-app-kit/storage`): the fewest operations the
 * kit needs from a database. The built-in SQLite and Postgres storage
 * implements exactly this interface, and the kit reaches every database,
 * built-in or the app's own (`storeApp({ storage: { adapter } })`), only
 * through it. Semantics: docs/storage.md ("Writing an adapter"); the
 * conformance suite (`store-app-kit/testing`) checks them.
 *
 * An adapter never sees a plaintext token: the kit encrypts before calling it
 * and decrypts what it returns (compact JWE bound to the store id), so a
 * third-party adapter that logs rows or ships them elsewhere leaks ciphertext.
 *
 * Rules every adapter keeps:
 * - A database failure rejects with `StorageError` (code `STORAGE_UNAVAILABLE`),
 *   never resolves as "not found" / `false` / `null`.
 * - Every operation is safe to call from several processes (several adapter
 *   instances) on one database at once; where a method says "exactly one
 *   caller", that holds across processes, not only within one.
 * - Dates go in and come out as `Date`s, to the millisecond.
 * - Time comes from the kit: where a method takes `now`, compare against it,
 *   never against the database's or the process's own clock. The kit's `now`,
 *   and every lease end, due time and schedule it passes, are in the
 *   database's clock when the adapter has `clock()` (one clock for every
 *   instance), else in the instance's.
 */

/** Token ciphertexts (compact JWE strings) and the facts stored beside them. */
export interface SealedTokens {
  /** Scopes the merchant granted. */
  scopes: string[];
  /** Opaque ciphertext; store and return it byte for byte. */
  accessTokenEnc: string;
  /** Opaque ciphertext, or null when the platform issued no refresh token. */
  refreshTokenEnc: string | null;
  /** Id of the key that sealed the tokens (for operators; the ciphertext names it too). */
  keyId: string;
  accessTokenExpiresAt: Date;
}

/** One store's installation as the adapter holds it. */
export interface StoredInstallation extends SealedTokens {
  storeId: string;
  /** When this installation was (re)installed, in the kit's clock (`now` of `save`). */
  installedAt: Date;
  updatedAt: Date;
  /** Starts at 1; +1 on every write of tokens (`save`, `refreshLease.complete`). */
  version: number;
  /** The platform refused the grant for good; the merchant must install again. */
  needsReauth: boolean;
  /** When the platform issued the tokens, in the platform's clock; null when unknown. */
  platformInstalledAt: Date | null;
}

export interface InstallationAdapter {
  /** The row, or null when the store has none. */
  get(storeId: string): Promise<StoredInstallation | null>;
  /** Every row, in any order (the kit sorts). */
  list(): Promise<StoredInstallation[]>;
  /**
   * Install or reinstall, atomically: insert the row at version 1, or replace
   * tokens, scopes, `platformInstalledAt` in place, set `installedAt` and
   * `updatedAt` to `now`, bump `version`, clear `needsReauth` and any refresh
   * lease. Returns the row as written.
   */
  save(
    storeId: string,
    tokens: SealedTokens,
    meta: { platformInstalledAt: Date | null; now: Date },
  ): Promise<StoredInstallation>;
  /**
   * Store ids whose access token expires before `before` and that are not
   * `needsReauth`, soonest first, at most `limit`.
   */
  listExpiringBefore(before: Date, limit: number): Promise<string[]>;
  /**
   * Set `needsReauth` and clear the lease (tokens and version unchanged). With
   * `expectedVersion`, only if the row is still at that version (a reinstall
   * meanwhile is never flagged). Returns true if a row was flagged.
   */
  markNeedsReauth(storeId: string, expectedVersion?: number): Promise<boolean>;
}

/** A row `completeMany` wrote: what it holds besides the tokens the caller has. */
export interface CompletedRow {
  version: number;
  installedAt: Date;
  platformInstalledAt: Date | null;
}

/**
 * The refresh lease: one refresher per store across processes, with no
 * transaction held during the call to the token endpoint. A compare-and-swap
 * on `version`.
 */
export interface RefreshLeaseAdapter {
  /**
   * Atomically take the lease for `owner` until `until` if the row is at
   * `expectedVersion` and no other owner holds a lease that ends after `now`
   * (`owner` may renew its own). True for the one caller that got it.
   */
  acquire(
    storeId: string,
    expectedVersion: number,
    owner: string,
    until: Date,
    now: Date,
  ): Promise<boolean>;
  /**
   * Atomically, if `owner` still holds the lease: write the tokens, set
   * `updatedAt` to `now`, bump `version`, clear the lease and `needsReauth`
   * (tokens the platform just issued are a valid grant: a refreshed pair whose
   * first write failed may land after another process flagged the row), and
   * return the row; otherwise change nothing and return null.
   */
  complete(
    storeId: string,
    owner: string,
    tokens: SealedTokens,
    now: Date,
  ): Promise<StoredInstallation | null>;
  /** Clear the lease if `owner` holds it; otherwise do nothing. */
  release(storeId: string, owner: string): Promise<void>;
  /**
   * Optional (the sweep's batch): atomically take the lease for `owner` until
   * `until` on at most `limit` installations whose token expires before
   * `before`, not flagged `needsReauth`, whose lease is free at `now` (none,
   * or one that ended at or before `now`), soonest expiry first, and return
   * them as leased, leaving out the store ids in `exclude` (tried already in
   * this pass). Across every process a row goes to one caller while its
   * lease lasts (Postgres: FOR UPDATE SKIP LOCKED). Without it the sweep lists
   * due ids and takes each lease with `acquire`.
   */
  claimDue?(
    before: Date,
    limit: number,
    owner: string,
    until: Date,
    now: Date,
    exclude: readonly string[],
  ): Promise<StoredInstallation[]>;
  /**
   * Optional: `complete` for several rows in one statement. Answers, in the
   * order of `items`, what the row holds besides the tokens written (its new
   * version and install times), or null where `owner` no longer held the lease
   * (nothing changed for that row). All or nothing: a failure rejects and
   * writes none. Without it the kit calls `complete` per row.
   */
  completeMany?(
    items: ReadonlyArray<{ storeId: string; owner: string; tokens: SealedTokens }>,
    now: Date,
  ): Promise<Array<CompletedRow | null>>;
}

/** An uninstall whose purge is not done yet (the purge outbox). */
export interface PendingPurgeEntry {
  eventId: string;
  storeId: string;
  /** The uninstall's own time (platform clock). */
  eventAt: Date;
}

/**
 * 'purge': the uninstall's purge is not done yet. 'sweep': it committed, and a
 * second pass is due at `nextAttemptAt` (the purge horizon) for rows that
 * requests still in flight at the commit wrote afterwards.
 */
export type PendingPurgeKind = 'purge' | 'sweep';

export interface PendingPurgeRecord extends PendingPurgeEntry {
  createdAt: Date;
  attempts: number;
  nextAttemptAt: Date;
  /** Error code of the last failed attempt. */
  lastError: string | null;
  kind: PendingPurgeKind;
}

/** Who takes entries of the outbox, until when, and how many (`PurgeOutboxAdapter.lease`). */
export interface PendingPurgeLease {
  /** Unique per call: the lease is the caller's while `until` has not passed. */
  owner: string;
  until: Date;
  limit: number;
  /**
   * Only this entry, due or not, and only while it is a 'purge' or leased to
   * `owner` (a redelivery works its purge at once but never runs a sweep
   * early; an owner renews its lease on either kind).
   */
  eventId?: string;
}

export interface PurgeOutboxAdapter {
  /**
   * Record a pending purge (kind 'purge', attempts 0, `createdAt` and
   * `nextAttemptAt` = `now`, no lease). A second add of one `eventId` changes
   * nothing.
   */
  add(entry: PendingPurgeEntry, now: Date): Promise<void>;
  /** Entries whose `nextAttemptAt` ≤ `now`, leased or not, earliest first, at most `limit`. */
  due(now: Date, limit: number): Promise<PendingPurgeRecord[]>;
  /** The entry of `eventId`, or null when there is none. */
  get(eventId: string): Promise<PendingPurgeRecord | null>;
  /**
   * Atomically lease due entries (`nextAttemptAt` ≤ `now`) whose lease is free
   * (none, one that ended at or before `now`, or `lease.owner`'s own: a
   * renewal) to `lease.owner` until
   * `lease.until`: earliest first, at most `lease.limit` (with `lease.eventId`,
   * see there). Returns the entries
   * leased. Across every process, an entry goes to exactly one caller while
   * its lease lasts, so instances sharing the outbox never work one entry
   * twice at once.
   */
  lease(now: Date, lease: PendingPurgeLease): Promise<PendingPurgeRecord[]>;
  /** Count one failed attempt, set `nextAttemptAt` and `lastError`, free the lease. */
  recordFailure(eventId: string, nextAttemptAt: Date, errorCode: string): Promise<void>;
  /**
   * The entry's work is done: delete it. With `sweepAt`, keep it instead as
   * kind 'sweep' due at `sweepAt` (attempts 0, `lastError` null, lease freed).
   */
  complete(eventId: string, sweepAt?: Date): Promise<void>;
}

/** What `webhooks.runOnce` hands the effects. */
export interface DeliveryScope<Tx> {
  /** The adapter's transaction handle; the app's webhook handlers write through it. */
  tx: Tx;
  /** Add a pending purge inside this transaction (commits with the delivery id, or not at all). */
  addPendingPurge(entry: PendingPurgeEntry): Promise<void>;
}

export type RunOnceResult<T> = { duplicate: true } | { duplicate: false; result: T };

export interface WebhookAdapter<Tx> {
  /**
   * In ONE transaction: record `webhookId`; if it was already recorded, stop
   * and return `{ duplicate: true }` without calling `effects`; else run
   * `effects` and commit. If `effects` throws, roll back (the id is not
   * recorded, pending purges added through the scope vanish) and rethrow it
   * unchanged. Concurrent calls with one id, from any process, run `effects`
   * once in total.
   */
  runOnce<T>(
    delivery: { webhookId: string; topic: string; receivedAt: Date },
    effects: (scope: DeliveryScope<Tx>) => Promise<T>,
  ): Promise<RunOnceResult<T>>;
  /** Forget ids received before `before`. Returns how many. */
  prune(before: Date): Promise<number>;
}

/** A server-side browser session (express-session data, JSON-safe). */
export interface SessionRecord {
  /** The store the session acts for, so a purge deletes it; null before install. */
  storeId: string | null;
  data: Record<string, unknown>;
  expiresAt: Date;
}

export interface SessionAdapter {
  /** The session, or null when there is none or it expired (`expiresAt` ≤ `now`). */
  get(sid: string, now: Date): Promise<SessionRecord | null>;
  /** Insert or replace. */
  set(sid: string, record: SessionRecord): Promise<void>;
  /** Replace data and expiry of an existing session; never creates one. */
  touch(sid: string, record: SessionRecord): Promise<void>;
  destroy(sid: string): Promise<void>;
  /** Delete sessions expired at `now`. Returns how many. */
  prune(now: Date): Promise<number>;
}

/** Rows deleted per table (or per kind of record), for the audit and logs. */
export interface PurgeCounts {
  [table: string]: number;
}

export interface PurgeResult {
  /** false when skipped (see `StorageAdapter.purge`). */
  purged: boolean;
  counts: PurgeCounts;
  /**
   * Whether deleted bytes were also made unreadable on disk after the commit,
   * when the adapter does such a step (SQLite WAL checkpoint, Postgres VACUUM).
   */
  scrubbed?: boolean;
}

export interface AdapterPurgeOptions<Tx> {
  /**
   * An uninstall event's time (platform clock). When given: skip (return
   * `{ purged: false, counts: {} }`) if the installation is newer than it
   * (its `platformInstalledAt`, else `installedAt`, is after it), or if there
   * is no installation and a purge was already recorded for an event at or
   * after it (a duplicate delivery); and delete the installation only if it
   * is not newer, so a reinstall committing meanwhile survives.
   */
  ifInstalledBefore?: Date;
  /**
   * The second pass after a committed purge (the outbox's 'sweep'): skip if
   * the store has an installation at all (the purge deleted the one it was
   * for, so any row is a reinstall, whatever its install time says); a purge
   * already recorded does not make it skip. It deletes what requests in
   * flight at the first purge wrote since, and records an audit entry only
   * when it deleted something.
   */
  sweep?: boolean;
  /**
   * The app's part (its own rows, other systems), run inside the transaction
   * before the kit's rows are deleted; returns counts to merge into the
   * result. If it throws, nothing is deleted and the error is rethrown.
   */
  effects?: (tx: Tx) => Promise<PurgeCounts | undefined>;
  /**
   * Call once the purge's transaction has committed (or the purge was
   * skipped), before any slow clean-up that follows it (the built-in adapter's
   * VACUUM / WAL checkpoint / OPTIMIZE TABLE): the purge outbox then starts
   * the next purge while this one's clean-up runs. An adapter that does not
   * call it only makes bursts slower.
   */
  onCommitted?: () => void;
  /**
   * The purge outbox entry this purge works (`PurgeOutboxAdapter`). When the
   * purge runs (is not skipped), settle the entry in the purge's own
   * transaction, so no crash can separate the two: with `sweepAfterMs` > 0
   * keep it as a 'sweep' (attempts 0, `lastError` null, lease freed) due at
   * `now` plus the time the purge has taken so far plus `sweepAfterMs` (the
   * purge horizon, counted from the commit); with 0 delete it. A skipped
   * purge leaves the entry alone. The kit still calls
   * `purgeOutbox.complete` after the purge, so an adapter that ignores this
   * option keeps working, but a crash between its commit and that call loses
   * the sweep (the re-run purge is then a skipped duplicate).
   */
  outbox?: { eventId: string; sweepAfterMs: number };
  now: Date;
}

/**
 * Everything a storage backend provides to the kit. `Tx` is the adapter's
 * transaction handle, handed to the app's webhook handlers and `onPurge`.
 */
export interface StorageAdapter<Tx = unknown> {
  /** Short name for logs and errors, e.g. 'sqlite', 'dynamodb'. */
  readonly name: string;
  readonly installations: InstallationAdapter;
  readonly refreshLease: RefreshLeaseAdapter;
  /**
   * Single use: atomically record (`namespace`, `id`) until `expiresAt`.
   * True for exactly one caller across every process while the claim is
   * unexpired (`expiresAt` > `now`); once it has expired, exactly one later
   * caller can take it again. Used for OAuth state, authorization codes and
   * launch-token ids: a replayable claim is a security hole.
   * Ids are 1-256 characters; expired claims may be pruned at any time.
   */
  claimOnce(namespace: string, id: string, expiresAt: Date, now: Date): Promise<boolean>;
  readonly webhooks: WebhookAdapter<Tx>;
  readonly purgeOutbox: PurgeOutboxAdapter;
  readonly sessions: SessionAdapter;
  /**
   * Delete everything held for the store in ONE transaction: run `effects`,
   * delete the installation (see `ifInstalledBefore`) and the store's
   * sessions, then record an audit entry (store id, time, `ifInstalledBefore`
   * as the event time, counts; no merchant data). Other stores untouched.
   * Counts name the kit's records by table, e.g. `store_app_installations`.
   * Purging twice without `ifInstalledBefore` purges twice (counts 0).
   */
  purge(storeId: string, options: AdapterPurgeOptions<Tx>): Promise<PurgeResult>;
  /**
   * Optional, recommended: the database's current time (one round trip). The
   * kit reads it every 30 s or so and carries it forward on its monotonic
   * clock, and decides leases, due times, outbox schedules and the purge
   * horizon in it, so instances whose host clocks disagree still share one
   * clock. Without it the kit uses each instance's own clock (keep the hosts
   * on NTP).
   */
  clock?(): Promise<Date>;
  /** Create or update what the adapter needs (tables, indexes); safe to call from several processes. */
  migrate(): Promise<void>;
  /** Release connections and timers. Calls after close may reject. */
  close(): Promise<void>;
}

/** Method paths every adapter must provide (the kit checks them at start). */
export const STORAGE_ADAPTER_METHODS = [
  'installations.get',
  'installations.list',
  'installations.save',
  'installations.listExpiringBefore',
  'installations.markNeedsReauth',
  'refreshLease.acquire',
  'refreshLease.complete',
  'refreshLease.release',
  'claimOnce',
  'webhooks.runOnce',
  'webhooks.prune',
  'purgeOutbox.add',
  'purgeOutbox.due',
  'purgeOutbox.get',
  'purgeOutbox.lease',
  'purgeOutbox.recordFailure',
  'purgeOutbox.complete',
  'sessions.get',
  'sessions.set',
  'sessions.touch',
  'sessions.destroy',
  'sessions.prune',
  'purge',
  'migrate',
  'close',
] as const;

/** Every method path `value` lacks, in interface order (empty when it has them all). */
export function missingAdapterMethods(value: unknown): string[] {
  const missing: string[] = [];
  for (const path of STORAGE_ADAPTER_METHODS) {
    let at: unknown = value;
    for (const part of path.split('.')) {
      at =
        at !== null && (typeof at === 'object' || typeof at === 'function')
          ? (at as Record<string, unknown>)[part]
          : undefined;
    }
    if (typeof at !== 'function') missing.push(path);
  }
  return missing;
}
