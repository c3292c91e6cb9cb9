/**
 * The kit's storage on Cloudflare D1, through Drizzle's D1 driver, as a
 * StorageAdapter (../contract.ts). Imports nothing of Node: a Worker builds it
 * from its binding (`d1Adapter(env.DB)`).
 *
 * D1 has no interactive transactions: a statement, or a `batch()` of
 * statements, is atomic, but nothing holds a transaction across an await of
 * the app's code. So:
 * - the refresh lease, claims, the outbox lease and the session writes are
 *   single statements (compare-and-swap: `UPDATE … WHERE … RETURNING`,
 *   `INSERT … ON CONFLICT … WHERE … RETURNING`);
 * - `webhooks.runOnce` and `purge`, which run the app's code "in one
 *   transaction", take a short lock first (a row of the claims table, timed in
 *   D1's own clock), run the app's code with a transaction handle that
 *   queues its writes (`D1Transaction.write`), and commit those writes with
 *   the kit's own in ONE batch: all or nothing. For a delivery the batch's
 *   first statement inserts the webhook id (a plain INSERT: a second commit
 *   of one id fails on the primary key and rolls its whole batch back), so
 *   the app's writes commit exactly once even if a lock ran out; a purge's
 *   batch starts with a check that its lock is still its own.
 */
import {
  and,
  asc,
  eq,
  inArray,
  isNull,
  lt,
  lte,
  or,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/d1';
import { type BaseSQLiteDatabase, SQLiteAsyncDialect } from 'drizzle-orm/sqlite-core';
import { ConfigError, StorageError } from '../../errors/index.js';
import type {
  PendingPurgeEntry,
  PendingPurgeKind,
  PendingPurgeRecord,
  PurgeCounts,
  PurgeResult,
  SealedTokens,
  StorageAdapter,
  StoredInstallation,
} from '../contract.js';
import * as schema from '../schema/sqlite.js';
import { d1Failure, d1StorageError, isD1Unavailable } from './errors.js';
import { D1_MIGRATIONS } from './migrations.js';

/**
 * The D1 binding (`env.DB`), as much of it as the adapter uses; the
 * `D1Database` of `@cloudflare/workers-types` and Miniflare's fit it.
 */
export interface D1DatabaseBinding {
  prepare(query: string): unknown;
  batch(statements: never[]): Promise<unknown[]>;
}

/** A write the app queues in a D1 transaction: any Drizzle query on `tx.db`, or a `sql` template. */
export type D1Write = SQLWrapper;

/**
 * The transaction handle `d1Adapter` hands to webhook handlers and `onPurge`.
 * Writes are queued and commit in one D1 batch together with the kit's own
 * statements (the webhook id, the pending purge, the purge's deletes), or not
 * at all when the handler throws. Build them on `tx.db` and hand them to
 * `tx.write(...)` instead of awaiting them:
 *
 * @example
 * kit.webhooks.on('orders/create', async (event, { tx }) => {
 *   const d1 = tx as D1Transaction;
 *   d1.write(d1.db.insert(orders).values({ id: event.id, topic: event.topic }));
 * });
 */
/**
 * Drizzle on a D1 database, typed without Drizzle's D1 driver types (they need
 * `@cloudflare/workers-types`, which an app may not have).
 */
export type D1Drizzle = BaseSQLiteDatabase<'async', unknown>;

export interface D1Transaction {
  /** Drizzle on the same D1 database. Reads see what is committed, not the writes queued here. */
  readonly db: D1Drizzle;
  /** Queue writes for the commit batch (in order). Throws once the transaction has ended. */
  write(...queries: D1Write[]): void;
}

export interface D1AdapterOptions {
  /**
   * Let `migrate()` apply the kit's migrations itself (the statements are
   * bundled; they are recorded in `migrationsTable` under wrangler's file
   * names, so `wrangler d1 migrations apply` later skips them). For local
   * development: in production apply them with wrangler, before deploying.
   * Without it `migrate()` only checks that they are applied.
   * @default false
   */
  applyMigrations?: boolean;
  /**
   * wrangler's migrations table (`migrations_table` in wrangler configuration).
   * @default 'd1_migrations'
   */
  migrationsTable?: string;
  /**
   * How long a delivery or purge waits for another instance holding the same
   * webhook id or store (it is running that delivery or purge) before failing
   * with StorageError (reason `locked`, a 503 the platform retries), in ms.
   * @default 2000
   */
  timeoutMs?: number;
}

/** How long a delivery's or purge's lock lasts if its holder never finishes (crash, eviction). */
export const D1_LOCK_MS = 30_000;
/** Claims-table namespace of the adapter's locks (never an app's or the kit's claim namespace). */
const LOCK_NAMESPACE = 'store-app-kit:d1-lock';
const GUARD_NAMESPACE = 'store-app-kit:d1-guard';
const CLAIM_PRUNE_INTERVAL_MS = 60_000;
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** D1's own clock, in epoch milliseconds (its SQLite's `unixepoch('subsec')`). */
const DB_NOW = sql.raw(`CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)`);

type InstallationRow = typeof schema.installations.$inferSelect;
type PendingPurgeRow = typeof schema.pendingPurges.$inferSelect;

const splitScopes = (scopes: string) => scopes.split(' ').filter((s) => s !== '');

function toStored(row: InstallationRow): StoredInstallation {
  return {
    storeId: row.storeId,
    scopes: splitScopes(row.scopes),
    accessTokenEnc: row.accessTokenEnc,
    refreshTokenEnc: row.refreshTokenEnc,
    keyId: row.keyId,
    accessTokenExpiresAt: row.accessExpiresAt,
    installedAt: row.installedAt,
    updatedAt: row.updatedAt,
    version: row.version,
    needsReauth: row.needsReauth,
    platformInstalledAt: row.platformInstalledAt ?? null,
  };
}

function toColumns(tokens: SealedTokens) {
  return {
    scopes: tokens.scopes.join(' '),
    accessTokenEnc: tokens.accessTokenEnc,
    refreshTokenEnc: tokens.refreshTokenEnc,
    keyId: tokens.keyId,
    accessExpiresAt: tokens.accessTokenExpiresAt,
  };
}

function toEntry(row: PendingPurgeRow): PendingPurgeRecord {
  return {
    eventId: row.eventId,
    storeId: row.storeId,
    eventAt: row.eventAt,
    createdAt: row.createdAt,
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    lastError: row.lastError ?? null,
    kind: (row.kind === 'sweep' ? 'sweep' : 'purge') satisfies PendingPurgeKind,
  };
}

const byDue = (x: PendingPurgeRecord, y: PendingPurgeRecord) =>
  x.nextAttemptAt.getTime() - y.nextAttemptAt.getTime() ||
  (x.eventId < y.eventId ? -1 : x.eventId > y.eventId ? 1 : 0);

/** Rows changed by a D1 run result. */
function changes(result: unknown): number {
  return Number((result as { meta?: { changes?: number } } | undefined)?.meta?.changes ?? 0);
}

/** Rows of a raw `db.all`/`returning` result in a batch. */
function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { results?: T[] } | undefined)?.results ?? []) as T[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A queued-writes transaction handle; `end()` closes it and returns what it queued. */
function openTransaction(db: D1Drizzle) {
  let open = true;
  const queued: D1Write[] = [];
  const tx: D1Transaction = {
    db,
    write(...queries) {
      if (!open) {
        throw new StorageError(
          'D1Transaction.write() after its delivery or purge ended: queue writes before the handler returns',
        );
      }
      queued.push(...queries);
    },
  };
  return {
    tx,
    end(): D1Write[] {
      open = false;
      return queued;
    },
  };
}

/** Checks `d1Adapter`'s binding and options when it is built: one error naming the setting. */
function d1Settings(
  binding: D1DatabaseBinding,
  options: D1AdapterOptions,
): { timeoutMs: number; migrationsTable: string } {
  if (binding === null || typeof binding !== 'object' || typeof binding.prepare !== 'function') {
    throw new ConfigError(
      'd1Adapter',
      'needs the D1 binding (e.g. env.DB, declared under d1_databases in wrangler configuration)',
    );
  }
  const timeoutMs = options.timeoutMs ?? 2000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 600_000) {
    throw new ConfigError('d1Adapter timeoutMs', 'must be a whole number of ms from 0 to 600000');
  }
  const migrationsTable = options.migrationsTable ?? 'd1_migrations';
  if (!TABLE_NAME.test(migrationsTable)) {
    throw new ConfigError('d1Adapter migrationsTable', 'must be a plain SQL table name');
  }
  return { timeoutMs, migrationsTable };
}

/** The lock statements on a D1 database: a claims row per webhook id or store, in D1's clock. */
function d1Locks(db: D1Drizzle) {
  const releaseLock = (key: string, until: number) =>
    db.run(sql`
      DELETE FROM store_app_claims
      WHERE namespace = ${LOCK_NAMESPACE} AND id = ${key} AND expires_at = ${until}`);
  return {
    /** The statement taking lock `key` unless `unless` (a SQL condition) holds; returns its expiry. */
    takeLock(key: string, unless: SQL = sql`0`) {
      return db.all<{ expires_at: number }>(sql`
        INSERT INTO store_app_claims (namespace, id, expires_at)
        SELECT ${LOCK_NAMESPACE}, ${key}, ${DB_NOW} + ${D1_LOCK_MS} WHERE NOT (${unless})
        ON CONFLICT (namespace, id) DO UPDATE SET expires_at = excluded.expires_at
        WHERE store_app_claims.expires_at <= ${DB_NOW}
        RETURNING expires_at`);
    },

    releaseLock,

    async release(key: string, until: number): Promise<void> {
      // Best effort: a lock left behind ends on its own after D1_LOCK_MS.
      await releaseLock(key, until).catch(() => undefined);
    },

    /** Aborts its batch (a NOT NULL violation) unless the lock is still held at `until`. */
    assertLock(key: string, until: number) {
      return db.run(sql`
        INSERT INTO store_app_claims (namespace, id, expires_at)
        SELECT ${GUARD_NAMESPACE}, NULL, 0
        WHERE NOT EXISTS (
          SELECT 1 FROM store_app_claims
          WHERE namespace = ${LOCK_NAMESPACE} AND id = ${key} AND expires_at = ${until})`);
    },
  };
}

/** Whether a batch failed because `assertLock` found its lock gone (its NOT NULL violation). */
const lockLost = (err: unknown) =>
  /NOT NULL constraint failed: store_app_claims\.id/.test(String((err as Error)?.message));

/** The statement recording a pending purge (kept when its event id is recorded already). */
const outboxInsert = (db: D1Drizzle, entry: PendingPurgeEntry, now: Date) =>
  db
    .insert(schema.pendingPurges)
    .values({
      eventId: entry.eventId,
      storeId: entry.storeId,
      eventAt: entry.eventAt,
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
    })
    .onConflictDoNothing({ target: schema.pendingPurges.eventId });

/**
 * The kit's storage on a D1 binding. Construct it in the Worker from
 * `env.DB`; nothing is opened until the first call.
 *
 * @example
 * const adapter = d1Adapter(env.DB);
 */
export function d1Adapter(
  binding: D1DatabaseBinding,
  options: D1AdapterOptions = {},
): StorageAdapter<D1Transaction> {
  const { timeoutMs, migrationsTable } = d1Settings(binding, options);
  const db = drizzle(binding as never) as D1Drizzle;
  const dialect = new SQLiteAsyncDialect();
  const t = schema;
  let closed = false;
  let lastPrune = 0;

  async function run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (closed) throw new StorageError(`${what} failed: the D1 adapter is closed`);
    try {
      return await fn();
    } catch (err) {
      throw d1StorageError(what, err);
    }
  }

  /**
   * One D1 batch (atomic) of Drizzle queries, on the binding itself: Drizzle's
   * own `batch` cannot bind the parameters of raw `sql` statements. Results
   * are D1's (`results` rows, `meta.changes`).
   */
  async function batch(what: string, items: D1Write[]): Promise<unknown[]> {
    if (closed) throw new StorageError(`${what} failed: the D1 adapter is closed`);
    const statements = items.map((item) => {
      const query = dialect.sqlToQuery(item.getSQL());
      return (binding.prepare(query.sql) as { bind(...values: unknown[]): unknown }).bind(
        ...query.params,
      );
    });
    return binding.batch(statements as never[]);
  }

  // --- Locks: a claims row per webhook id or store, in D1's clock ---------

  const { takeLock, releaseLock, assertLock, release } = d1Locks(db);

  /**
   * Takes lock `key`, waiting while another instance holds it, up to
   * `timeoutMs`. `done` (batched with each try) says the work is already
   * recorded: then resolves null without taking the lock.
   */
  async function acquire(
    what: string,
    key: string,
    done?: { unless: SQL; check: D1Write },
  ): Promise<number | null> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const results = await run(what, () =>
        done ? batch(what, [takeLock(key, done.unless), done.check]) : batch(what, [takeLock(key)]),
      );
      const taken = rowsOf<{ expires_at: number }>(results[0])[0];
      if (taken) return Number(taken.expires_at);
      if (done && rowsOf(results[1]).length > 0) return null;
      if (Date.now() - started >= timeoutMs) {
        throw d1Failure(what, 'locked', 'another instance is working on the same record');
      }
      await sleep(Math.min(10 * 2 ** attempt, 100));
    }
  }

  // --- Installations and the refresh lease --------------------------------

  async function readRow(storeId: string): Promise<InstallationRow | undefined> {
    const rows = await run('reading an installation', () =>
      db.select().from(t.installations).where(eq(t.installations.storeId, storeId)).limit(1),
    );
    return rows[0];
  }

  const installations: StorageAdapter['installations'] = {
    async get(storeId) {
      const row = await readRow(storeId);
      return row ? toStored(row) : null;
    },
    async list() {
      const rows = await run('listing installations', () =>
        db.select().from(t.installations).orderBy(asc(t.installations.storeId)),
      );
      return rows.map(toStored);
    },
    async save(storeId, tokens, { platformInstalledAt, now }) {
      const values = { ...toColumns(tokens), platformInstalledAt };
      const rows = await run('storing an installation', () =>
        db
          .insert(t.installations)
          .values({ storeId, ...values, installedAt: now, updatedAt: now, version: 1 })
          .onConflictDoUpdate({
            target: t.installations.storeId,
            set: {
              ...values,
              installedAt: now,
              updatedAt: now,
              version: sql`${t.installations.version} + 1`,
              needsReauth: false,
              refreshLeaseOwner: null,
              refreshLeaseUntil: null,
            },
          })
          .returning(),
      );
      return toStored(rows[0]!);
    },
    async listExpiringBefore(before, limit) {
      const rows = await run('listing expiring installations', () =>
        db
          .select({ storeId: t.installations.storeId })
          .from(t.installations)
          .where(
            and(
              lt(t.installations.accessExpiresAt, before),
              eq(t.installations.needsReauth, false),
            ),
          )
          .orderBy(asc(t.installations.accessExpiresAt))
          .limit(limit),
      );
      return rows.map((r) => r.storeId);
    },
    async markNeedsReauth(storeId, expectedVersion) {
      const result = await run('flagging an installation for reinstall', () =>
        db
          .update(t.installations)
          .set({
            needsReauth: true,
            refreshLeaseOwner: null,
            refreshLeaseUntil: null,
            updatedAt: sql`${DB_NOW}`,
          })
          .where(
            expectedVersion === undefined
              ? eq(t.installations.storeId, storeId)
              : and(
                  eq(t.installations.storeId, storeId),
                  eq(t.installations.version, expectedVersion),
                ),
          ),
      );
      return changes(result) === 1;
    },
  };

  const refreshLease: StorageAdapter['refreshLease'] = {
    async acquire(storeId, expectedVersion, owner, until, now) {
      const i = t.installations;
      const result = await run('taking the refresh lease', () =>
        db
          .update(i)
          .set({ refreshLeaseOwner: owner, refreshLeaseUntil: until })
          .where(
            and(
              eq(i.storeId, storeId),
              eq(i.version, expectedVersion),
              or(
                isNull(i.refreshLeaseOwner),
                isNull(i.refreshLeaseUntil),
                lte(i.refreshLeaseUntil, now),
                eq(i.refreshLeaseOwner, owner),
              ),
            ),
          ),
      );
      return changes(result) === 1;
    },
    async complete(storeId, owner, tokens, now) {
      const i = t.installations;
      const rows = await run('storing refreshed tokens', () =>
        db
          .update(i)
          .set({
            ...toColumns(tokens),
            updatedAt: now,
            version: sql`${i.version} + 1`,
            needsReauth: false,
            refreshLeaseOwner: null,
            refreshLeaseUntil: null,
          })
          .where(and(eq(i.storeId, storeId), eq(i.refreshLeaseOwner, owner)))
          .returning(),
      );
      return rows[0] ? toStored(rows[0]) : null;
    },
    async release(storeId, owner) {
      const i = t.installations;
      await run('releasing the refresh lease', () =>
        db
          .update(i)
          .set({ refreshLeaseOwner: null, refreshLeaseUntil: null })
          .where(and(eq(i.storeId, storeId), eq(i.refreshLeaseOwner, owner))),
      );
    },
  };

  // --- Claims ---------------------------------------------------------------

  async function claimOnce(namespace: string, id: string, expiresAt: Date, now: Date) {
    const c = t.claims;
    if (now.getTime() - lastPrune >= CLAIM_PRUNE_INTERVAL_MS) {
      lastPrune = now.getTime();
      // Claims expire in the kit's clock (`now`), the adapter's locks in D1's.
      await run('pruning expired claims', () =>
        db.run(sql`
          DELETE FROM store_app_claims
          WHERE (namespace <> ${LOCK_NAMESPACE} AND expires_at < ${now.getTime()})
             OR (namespace = ${LOCK_NAMESPACE} AND expires_at < ${DB_NOW})`),
      );
    }
    // One statement: a new id inserts, an expired claim is taken over, an
    // unexpired one updates nothing and returns no row.
    const rows = await run('claiming an id', () =>
      db
        .insert(c)
        .values({ namespace, id, expiresAt })
        .onConflictDoUpdate({
          target: [c.namespace, c.id],
          set: { expiresAt: sql`excluded.expires_at` },
          setWhere: lte(c.expiresAt, now),
        })
        .returning({ id: c.id }),
    );
    return rows.length === 1;
  }

  // --- Purge outbox -----------------------------------------------------------

  const p = t.pendingPurges;

  const purgeOutbox: StorageAdapter['purgeOutbox'] = {
    async add(entry, now) {
      await run('recording a pending purge', () => outboxInsert(db, entry, now));
    },
    async due(now, limit) {
      const rows = await run('listing due purges', () =>
        db
          .select()
          .from(p)
          .where(lte(p.nextAttemptAt, now))
          .orderBy(asc(p.nextAttemptAt), asc(p.eventId))
          .limit(limit),
      );
      return rows.map(toEntry);
    },
    async get(eventId) {
      const rows = await run('reading a pending purge', () =>
        db.select().from(p).where(eq(p.eventId, eventId)).limit(1),
      );
      return rows[0] ? toEntry(rows[0]) : null;
    },
    async lease(now, { owner, until, limit, eventId }) {
      const dueAndFree = and(
        eventId === undefined
          ? lte(p.nextAttemptAt, now)
          : and(eq(p.eventId, eventId), or(eq(p.kind, 'purge'), eq(p.leaseOwner, owner))),
        or(isNull(p.leaseUntil), lte(p.leaseUntil, now), eq(p.leaseOwner, owner)),
      );
      // One statement: D1 runs it alone, so of instances racing for an entry
      // exactly one sets its owner.
      const candidates = db
        .select({ eventId: p.eventId })
        .from(p)
        .where(dueAndFree)
        .orderBy(asc(p.nextAttemptAt), asc(p.eventId))
        .limit(limit);
      const rows = await run('leasing pending purges', () =>
        db
          .update(p)
          .set({ leaseOwner: owner, leaseUntil: until })
          .where(and(inArray(p.eventId, candidates), dueAndFree))
          .returning(),
      );
      return rows.map(toEntry).sort(byDue);
    },
    async recordFailure(eventId, nextAttemptAt, errorCode) {
      await run('recording a failed purge attempt', () =>
        db
          .update(p)
          .set({
            attempts: sql`${p.attempts} + 1`,
            nextAttemptAt,
            lastError: errorCode.slice(0, 64),
            leaseOwner: null,
            leaseUntil: null,
          })
          .where(eq(p.eventId, eventId)),
      );
    },
    async complete(eventId, sweepAt) {
      await run('completing a pending purge', () =>
        sweepAt === undefined
          ? db.delete(p).where(eq(p.eventId, eventId))
          : db
              .update(p)
              .set({
                kind: 'sweep',
                attempts: 0,
                nextAttemptAt: sweepAt,
                lastError: null,
                leaseOwner: null,
                leaseUntil: null,
              })
              .where(eq(p.eventId, eventId)),
      );
    },
  };

  // --- Webhook dedupe ---------------------------------------------------------

  const w = t.webhookDeliveries;
  const webhooks: StorageAdapter<D1Transaction>['webhooks'] = {
    async runOnce({ webhookId, topic, receivedAt }, effects) {
      const what = 'recording a webhook delivery';
      const key = `webhook:${webhookId}`;
      const recorded = sql`EXISTS (SELECT 1 FROM store_app_webhook_deliveries WHERE webhook_id = ${webhookId})`;
      const until = await acquire(what, key, {
        unless: recorded,
        check: db.select({ id: w.webhookId }).from(w).where(eq(w.webhookId, webhookId)),
      });
      if (until === null) return { duplicate: true } as const;
      const { tx, end } = openTransaction(db);
      const purges: PendingPurgeEntry[] = [];
      let result: Awaited<ReturnType<typeof effects>>;
      try {
        result = await effects({
          tx,
          addPendingPurge: async (entry) => {
            purges.push(entry);
          },
        });
      } catch (err) {
        end();
        await release(key, until);
        throw err;
      }
      const writes = end();
      try {
        await batch(what, [
          // A plain INSERT: if another instance committed this id meanwhile
          // (this lock ran out), the primary key rolls the whole batch back.
          db.insert(w).values({ webhookId, topic, receivedAt }),
          ...purges.map((entry) => outboxInsert(db, entry, receivedAt)),
          ...writes,
          releaseLock(key, until),
        ]);
      } catch (err) {
        await release(key, until);
        if (
          /UNIQUE constraint failed: store_app_webhook_deliveries\.webhook_id/.test(
            String((err as Error)?.message),
          )
        ) {
          return { duplicate: true } as const;
        }
        // The app's own statements failing (a constraint) come back as they are.
        throw isD1Unavailable(err) ? d1StorageError(what, err) : err;
      }
      return { duplicate: false, result } as const;
    },
    async prune(before) {
      const result = await run('pruning webhook deliveries', () =>
        db.delete(w).where(lt(w.receivedAt, before)),
      );
      return changes(result);
    },
  };

  // --- Sessions ---------------------------------------------------------------

  const s = t.sessions;
  const sessions: StorageAdapter['sessions'] = {
    async get(sid, now) {
      const rows = await run('reading a session', () =>
        db.select().from(s).where(eq(s.sid, sid)).limit(1),
      );
      const row = rows[0];
      if (!row || row.expiresAt.getTime() <= now.getTime()) return null;
      return {
        storeId: row.storeId ?? null,
        data: row.data as Record<string, unknown>,
        expiresAt: row.expiresAt,
      };
    },
    async set(sid, record) {
      const values = { storeId: record.storeId, data: record.data, expiresAt: record.expiresAt };
      await run('storing a session', () =>
        db
          .insert(s)
          .values({ sid, ...values })
          .onConflictDoUpdate({ target: s.sid, set: values }),
      );
    },
    async touch(sid, record) {
      await run('touching a session', () =>
        db.update(s).set({ data: record.data, expiresAt: record.expiresAt }).where(eq(s.sid, sid)),
      );
    },
    async destroy(sid) {
      await run('deleting a session', () => db.delete(s).where(eq(s.sid, sid)));
    },
    async prune(now) {
      const result = await run('pruning expired sessions', () =>
        db.delete(s).where(lte(s.expiresAt, now)),
      );
      return changes(result);
    },
  };

  // --- Purge ------------------------------------------------------------------

  const purge: StorageAdapter<D1Transaction>['purge'] = async (storeId, options) => {
    const what = 'purging a store';
    const started = performance.now();
    const key = `purge:${storeId}`;
    const taken = await acquire(what, key);
    if (taken === null) throw new Error('unreachable: a purge lock has no "done" check');
    const until: number = taken;
    let committed = false;
    let result: PurgeResult;
    try {
      result = await decideAndCommit();
    } finally {
      // Committed: the batch released the lock. Skipped or failed: release it now.
      if (!committed) await release(key, until);
    }
    // Like the built-in adapter: only once committed (or skipped), never after a failure.
    options.onCommitted?.();
    return result;

    /** The statement settling the purge's outbox entry (AdapterPurgeOptions.outbox), if any. */
    function settleOutbox(): D1Write[] {
      const { outbox } = options;
      if (!outbox) return [];
      const where = eq(p.eventId, outbox.eventId);
      if (outbox.sweepAfterMs <= 0) return [db.delete(p).where(where)];
      // `now` carried to the commit on the monotonic clock, then the horizon.
      const due = options.now.getTime() + Math.ceil(performance.now() - started);
      return [
        db
          .update(p)
          .set({
            kind: 'sweep',
            attempts: 0,
            nextAttemptAt: new Date(due + outbox.sweepAfterMs),
            lastError: null,
            leaseOwner: null,
            leaseUntil: null,
          })
          .where(where),
      ];
    }

    async function decideAndCommit(): Promise<PurgeResult> {
      const skip = { purged: false, counts: {} };
      const row = await readRow(storeId);
      const before = options.ifInstalledBefore;
      // Any installation after the purge a sweep follows is a reinstall.
      if (options.sweep && row) return skip;
      if (before !== undefined) {
        const installedAt = row ? (row.platformInstalledAt ?? row.installedAt) : undefined;
        if (installedAt !== undefined && installedAt.getTime() > before.getTime()) return skip;
        // No installation and a purge recorded for this event or a later one: a duplicate.
        if (installedAt === undefined && !options.sweep) {
          const done = await run('reading the purge audit', () =>
            db
              .select({ id: t.purgeAudit.id })
              .from(t.purgeAudit)
              .where(
                and(
                  eq(t.purgeAudit.storeId, storeId),
                  sql`${t.purgeAudit.eventAt} >= ${before.getTime()}`,
                ),
              )
              .limit(1),
          );
          if (done.length > 0) return skip;
        }
      }

      const { tx, end } = openTransaction(db);
      let appCounts: PurgeCounts;
      let writes: D1Write[];
      try {
        appCounts = { ...((await options.effects?.(tx)) ?? {}) };
      } finally {
        writes = end();
      }
      // The installation goes only if not newer than the event (a reinstall
      // committing meanwhile survives).
      const installation =
        before === undefined
          ? sql`store_id = ${storeId}`
          : sql`store_id = ${storeId} AND (platform_installed_at <= ${before.getTime()}
              OR (platform_installed_at IS NULL AND installed_at <= ${before.getTime()}))`;
      const countInstallation = sql`(SELECT count(*) FROM store_app_installations WHERE ${installation})`;
      const countSessions = sql`(SELECT count(*) FROM store_app_sessions WHERE store_id = ${storeId})`;
      const appTotal = Object.values(appCounts).reduce((sum, n) => sum + n, 0);
      // The audit row is written before the deletes it counts: one batch runs
      // alone on D1, so the counts are what the deletes below remove. A sweep
      // that finds nothing leaves no row.
      const audit = db.run(sql`
        INSERT INTO store_app_purge_audit (store_id, purged_at, event_at, counts)
        SELECT ${storeId}, ${options.now.getTime()}, ${before?.getTime() ?? null},
          json_patch(${JSON.stringify(appCounts)}, json_object(
            'store_app_installations', ${countInstallation},
            'store_app_sessions', ${countSessions}))
        WHERE ${options.sweep ? 1 : 0} = 0
           OR ${countInstallation} + ${countSessions} + ${appTotal} > 0`);
      let results: unknown[];
      try {
        results = await batch(what, [
          assertLock(key, until),
          ...writes,
          audit,
          db.run(sql`DELETE FROM store_app_installations WHERE ${installation}`),
          db.delete(s).where(eq(s.storeId, storeId)),
          // The outbox entry settles in the purge's batch: no crash separates them.
          ...settleOutbox(),
          releaseLock(key, until),
        ]);
      } catch (err) {
        if (lockLost(err)) {
          throw d1Failure(what, 'locked', `its lock ran out (${D1_LOCK_MS} ms) before the commit`);
        }
        throw isD1Unavailable(err) ? d1StorageError(what, err) : err;
      }
      committed = true;
      const n = writes.length;
      const counts: PurgeCounts = {
        ...appCounts,
        store_app_installations: changes(results[n + 2]),
        store_app_sessions: changes(results[n + 3]),
      };
      return { purged: true, counts };
    }
  };

  // --- Migrations -------------------------------------------------------------

  async function appliedMigrations(): Promise<Set<string> | null> {
    const tables = await run('reading the D1 migrations table', () =>
      db.all<{ name: string }>(
        sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${migrationsTable}`,
      ),
    );
    if (tables.length === 0) return null;
    const rows = await run('reading the D1 migrations table', () =>
      db.all<{ name: string }>(sql`SELECT name FROM ${sql.identifier(migrationsTable)}`),
    );
    return new Set(rows.map((r) => r.name));
  }

  async function migrate(): Promise<void> {
    if (!options.applyMigrations) {
      const applied = (await appliedMigrations()) ?? new Set<string>();
      const missing = D1_MIGRATIONS.filter((m) => !applied.has(m.name)).map((m) => m.name);
      if (missing.length > 0) {
        throw new ConfigError(
          'storage.adapter',
          `the D1 database lacks the kit's migrations ${missing.join(', ')} (in ${migrationsTable}): ` +
            'copy node_modules/store-app-kit/migrations/d1/*.sql into your migrations_dir and run ' +
            '`wrangler d1 migrations apply`, or pass d1Adapter(env.DB, { applyMigrations: true }) in development',
        );
      }
      return;
    }
    // wrangler's own table, so `wrangler d1 migrations apply` sees what was applied here.
    await run('creating the D1 migrations table', () =>
      db.run(sql`CREATE TABLE IF NOT EXISTS ${sql.identifier(migrationsTable)} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT UNIQUE,
        applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)`),
    );
    for (const migration of D1_MIGRATIONS) {
      const applied = (await appliedMigrations()) ?? new Set<string>();
      if (applied.has(migration.name)) continue;
      try {
        // One batch per migration: its statements and its record, all or nothing.
        await batch('applying a D1 migration', [
          ...migration.statements.map((statement) => db.run(sql.raw(statement))),
          db.run(
            sql`INSERT INTO ${sql.identifier(migrationsTable)} (name) VALUES (${migration.name})`,
          ),
        ]);
      } catch (err) {
        // Another instance applying it at the same time wins; this one goes on.
        if ((await appliedMigrations())?.has(migration.name)) continue;
        throw d1StorageError(`applying D1 migration ${migration.name}`, err);
      }
    }
  }

  return {
    name: 'd1',
    installations,
    refreshLease,
    claimOnce,
    webhooks,
    purgeOutbox,
    sessions,
    purge,
    // D1's own clock (one database, one clock), as the adapter's locks use.
    async clock() {
      const rows = await run('reading the database clock', () =>
        db.all<{ ms: number }>(sql`SELECT ${DB_NOW} AS ms`),
      );
      return new Date(Math.round(Number(rows[0]?.ms)));
    },
    migrate,
    async close() {
      // A binding has nothing to release; calls after close reject.
      closed = true;
    },
  };
}
