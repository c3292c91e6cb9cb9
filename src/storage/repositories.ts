/**
 * The built-in storage's operations (the public StorageAdapter contract of
 * ./contract.ts), written once against the dialect adapter. Tokens arrive and
 * leave as ciphertext: encryption is the kit's, above this layer
 * (./sealed.ts). Every DB failure surfaces as StorageError (see adapter.run).
 */
import {
  and,
  asc,
  eq,
  getTableName,
  gte,
  inArray,
  isNull,
  lt,
  lte,
  notInArray,
  or,
  sql,
} from 'drizzle-orm';
import type { Db, DialectAdapter, KitTables } from './adapter.js';
import type {
  AdapterPurgeOptions,
  CompletedRow,
  InstallationAdapter,
  PurgeCounts,
  PurgeOutboxAdapter,
  PurgeResult,
  RefreshLeaseAdapter,
  SealedTokens,
  StorageAdapter,
  StoredInstallation,
  WebhookAdapter,
} from './contract.js';
import { mysqlClaim, mysqlInsertIfAbsent, mysqlUpsert } from './mysql-statements.js';
import type { ScopedTable } from './scoped-tables.js';
import { createScrubBatch } from './scrub-batch.js';

export { type ScopedTable, validateStoreScopedTables } from './scoped-tables.js';

import type { AnyDrizzle } from './types.js';

/**
 * For the kit's own transactions: a deadlock victim is rolled back whole
 * (effects and onPurge included), so running it again is what a redelivery
 * or the outbox's next attempt would do anyway.
 */
const RETRY_LOCK_CONFLICTS = { retryOnLockConflict: true } as const;
/** Deliveries that arrive together share one COMMIT (one fsync) on SQLite. */
const GROUPED_DELIVERY = { ...RETRY_LOCK_CONFLICTS, group: true } as const;
/** Refresh lease writes that come together share one COMMIT on SQLite (see leaseWrite). */
const GROUPED_LEASE_WRITE = { group: true } as const;

type InstallationRow = KitTables['installations']['$inferSelect'];

const joinScopes = (scopes: readonly string[]) => scopes.join(' ');
const splitScopes = (scopes: string) => scopes.split(' ').filter((s) => s !== '');

/** Drizzle's prepared query of either dialect: both run with `execute(values)`. */
interface Prepared<R> {
  execute(values: Record<string, unknown>): Promise<R>;
}

/**
 * A hot-path query built and prepared once per database handle instead of per
 * call (building costs more than SQLite runs it). SQLite runs transactions on
 * its one handle, so it prepares once; on Postgres each transaction has its own
 * handle, which prepares the (named, server-side) statement for itself.
 */
function preparedOn<R>(name: string, build: (db: Db) => { prepare(): unknown }) {
  const byHandle = new WeakMap<object, Prepared<R>>();
  return (db: Db): Prepared<R> => {
    let query = byHandle.get(db);
    if (query === undefined) {
      // The Postgres builders take the statement name; SQLite's ignore it.
      query = (build(db).prepare as (name: string) => Prepared<R>).call(build(db), name);
      byHandle.set(db, query);
    }
    return query;
  };
}

/** A row as the contract returns it (tokens stay ciphertext). */
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
    scopes: joinScopes(tokens.scopes),
    accessTokenEnc: tokens.accessTokenEnc,
    refreshTokenEnc: tokens.refreshTokenEnc,
    keyId: tokens.keyId,
    accessExpiresAt: tokens.accessTokenExpiresAt,
  };
}

export function createInstallationRepository(adapter: DialectAdapter): {
  installations: InstallationAdapter;
  refreshLease: RefreshLeaseAdapter;
} {
  const t = adapter.tables.installations;

  const selectRow = preparedOn<InstallationRow[]>('store_app_installation_by_store', (db) =>
    db
      .select()
      .from(t)
      .where(eq(t.storeId, sql.placeholder('storeId')))
      .limit(1),
  );

  async function readRow(storeId: string): Promise<InstallationRow | undefined> {
    const rows = await adapter.run('reading an installation', (db) =>
      selectRow(db).execute({ storeId }),
    );
    return rows[0];
  }

  const installations: InstallationAdapter = {
    async get(storeId) {
      const row = await readRow(storeId);
      return row ? toStored(row) : null;
    },

    async list() {
      const rows = await adapter.run('listing installations', (db) =>
        db.select().from(t).orderBy(asc(t.storeId)),
      );
      return rows.map(toStored);
    },

    async save(storeId, tokens, meta) {
      const values = { ...toColumns(tokens), platformInstalledAt: meta.platformInstalledAt };
      const now = meta.now;
      const insert = { storeId, ...values, installedAt: now, updatedAt: now, version: 1 };
      const set = {
        ...values,
        installedAt: now,
        updatedAt: now,
        version: sql`${t.version} + 1`,
        needsReauth: false,
        refreshLeaseOwner: null,
        refreshLeaseUntil: null,
      };
      if (adapter.dialect === 'mysql') {
        // No RETURNING: write and re-read in one transaction (the row stays
        // locked by the write, so the read sees this write, not a later one).
        const row = await adapter.transaction(async () => {
          await adapter.run('storing an installation', (db) => mysqlUpsert(db, t, insert, set));
          return readRow(storeId);
        }, RETRY_LOCK_CONFLICTS);
        return toStored(row!);
      }
      const rows = await adapter.run('storing an installation', (db) =>
        db.insert(t).values(insert).onConflictDoUpdate({ target: t.storeId, set }).returning(),
      );
      return toStored(rows[0]!);
    },

    async markNeedsReauth(storeId, expectedVersion) {
      const result = await adapter.run('flagging an installation for reinstall', (db) =>
        db
          .update(t)
          .set({
            needsReauth: true,
            refreshLeaseOwner: null,
            refreshLeaseUntil: null,
            updatedAt: new Date(),
          })
          .where(
            expectedVersion === undefined
              ? eq(t.storeId, storeId)
              : and(eq(t.storeId, storeId), eq(t.version, expectedVersion)),
          ),
      );
      return adapter.affected(result) === 1;
    },

    async listExpiringBefore(before, limit) {
      const rows = await adapter.run('listing expiring installations', (db) =>
        db
          .select({ storeId: t.storeId })
          .from(t)
          .where(and(lt(t.accessExpiresAt, before), eq(t.needsReauth, false)))
          .orderBy(asc(t.accessExpiresAt))
          .limit(limit),
      );
      return rows.map((r) => r.storeId);
    },
  };

  /**
   * SQLite's `complete` (a sweep's one write per store), prepared once: building the
   * UPDATE and preparing it again for every refreshed store cost more than running it.
   * Times go in as epoch milliseconds (the columns' storage; placeholders in raw SQL
   * are not encoded by the column).
   */
  const completeRow = preparedOn<InstallationRow[]>('store_app_installation_complete', (db) =>
    db
      .update(t)
      .set({
        scopes: sql`${sql.placeholder('scopes')}`,
        accessTokenEnc: sql`${sql.placeholder('accessTokenEnc')}`,
        refreshTokenEnc: sql`${sql.placeholder('refreshTokenEnc')}`,
        keyId: sql`${sql.placeholder('keyId')}`,
        accessExpiresAt: sql`${sql.placeholder('accessExpiresAt')}`,
        updatedAt: sql`${sql.placeholder('now')}`,
        version: sql`${t.version} + 1`,
        needsReauth: false,
        refreshLeaseOwner: null,
        refreshLeaseUntil: null,
      })
      .where(
        and(
          eq(t.storeId, sql.placeholder('storeId')),
          eq(t.refreshLeaseOwner, sql.placeholder('owner')),
        ),
      )
      .returning(),
  );

  /**
   * On SQLite every COMMIT is an fsync that blocks the event loop (synchronous
   * = FULL), and a refresh makes two (lease, then tokens): that, not the token
   * endpoint, capped a sweep at a few hundred refreshes a second. Lease writes
   * asked for together share one COMMIT (./group-commit.ts); each still
   * settles only once it is durable. The server dialects commit per statement.
   */
  const leaseWrite = <T>(fn: () => Promise<T>): Promise<T> =>
    adapter.dialect === 'sqlite' ? adapter.transaction(fn, GROUPED_LEASE_WRITE) : fn();

  const refreshLease: RefreshLeaseAdapter = {
    async acquire(storeId, expectedVersion, owner, until, now) {
      const result = await leaseWrite(() =>
        adapter.run('taking the refresh lease', (db) =>
          db
            .update(t)
            .set({ refreshLeaseOwner: owner, refreshLeaseUntil: until })
            .where(
              and(
                eq(t.storeId, storeId),
                eq(t.version, expectedVersion),
                or(
                  isNull(t.refreshLeaseOwner),
                  isNull(t.refreshLeaseUntil),
                  lte(t.refreshLeaseUntil, now),
                  eq(t.refreshLeaseOwner, owner),
                ),
              ),
            ),
        ),
      );
      return adapter.affected(result) === 1;
    },

    async complete(storeId, owner, tokens, now) {
      const update = (db: Db) =>
        db
          .update(t)
          .set({
            ...toColumns(tokens),
            updatedAt: now,
            version: sql`${t.version} + 1`,
            // Tokens the platform just issued are a valid grant (see contract.ts).
            needsReauth: false,
            refreshLeaseOwner: null,
            refreshLeaseUntil: null,
          })
          .where(and(eq(t.storeId, storeId), eq(t.refreshLeaseOwner, owner)));
      if (adapter.dialect === 'mysql') {
        // No RETURNING: update and re-read in one transaction (see save).
        const row = await adapter.transaction(async () => {
          const result = await adapter.run('storing refreshed tokens', update);
          return adapter.affected(result) === 1 ? readRow(storeId) : undefined;
        }, RETRY_LOCK_CONFLICTS);
        return row ? toStored(row) : null;
      }
      const rows = await leaseWrite(() =>
        adapter.run('storing refreshed tokens', (db) =>
          adapter.dialect === 'sqlite'
            ? completeRow(db).execute({
                ...toColumns(tokens),
                accessExpiresAt: tokens.accessTokenExpiresAt.getTime(),
                now: now.getTime(),
                storeId,
                owner,
              })
            : update(db).returning(),
        ),
      );
      return rows[0] ? toStored(rows[0]) : null;
    },

    async release(storeId, owner) {
      await adapter.run('releasing the refresh lease', (db) =>
        db
          .update(t)
          .set({ refreshLeaseOwner: null, refreshLeaseUntil: null })
          .where(and(eq(t.storeId, storeId), eq(t.refreshLeaseOwner, owner))),
      );
    },
  };

  // MySQL has neither UPDATE … RETURNING nor LIMIT in an IN subquery: its sweep
  // takes leases one row at a time (the contract's fallback).
  if (adapter.dialect !== 'mysql') {
    /**
     * One statement leases a page of due rows (issue 33: a sweep of 100,000
     * paid a listing, a read and a lease write per store). Postgres skips rows
     * another claimer has locked, so concurrent sweeps get disjoint pages;
     * SQLite has one writer. The lease-free test is repeated on the outer
     * UPDATE: a row leased since the subquery's snapshot is left alone.
     */
    refreshLease.claimDue = async (before, limit, owner, until, now, exclude) => {
      const leaseFree = or(
        isNull(t.refreshLeaseOwner),
        isNull(t.refreshLeaseUntil),
        lte(t.refreshLeaseUntil, now),
      );
      const rows = await leaseWrite(() =>
        adapter.run('claiming due installations', (db) => {
          const due = db
            .select({ storeId: t.storeId })
            .from(t)
            .where(
              and(
                lt(t.accessExpiresAt, before),
                eq(t.needsReauth, false),
                leaseFree,
                exclude.length > 0 ? notInArray(t.storeId, [...exclude]) : undefined,
              ),
            )
            .orderBy(asc(t.accessExpiresAt))
            .limit(limit);
          const page =
            adapter.dialect === 'postgres'
              ? (
                  due as unknown as {
                    for(strength: 'update', config: { skipLocked: boolean }): typeof due;
                  }
                ).for('update', { skipLocked: true })
              : due;
          return db
            .update(t)
            .set({ refreshLeaseOwner: owner, refreshLeaseUntil: until })
            .where(and(inArray(t.storeId, page), eq(t.needsReauth, false), leaseFree))
            .returning();
        }),
      );
      return (rows as InstallationRow[])
        .map(toStored)
        .sort((a, b) => a.accessTokenExpiresAt.getTime() - b.accessTokenExpiresAt.getTime());
    };
  }
  if (adapter.dialect === 'postgres') {
    /**
     * Refreshed pairs that land together, one UPDATE … FROM (VALUES …): one
     * round trip instead of one per store. (SQLite already shares one COMMIT
     * between the writes of a turn, ./group-commit.ts, and runs in-process.)
     */
    refreshLease.completeMany = async (items, now) => {
      if (items.length === 0) return [];
      const values = sql.join(
        items.map(
          ({ storeId, owner, tokens }) =>
            sql`(${storeId}::text, ${owner}::text, ${joinScopes(tokens.scopes)}::text, ${tokens.accessTokenEnc}::text, ${tokens.refreshTokenEnc}::text, ${tokens.keyId}::text, ${tokens.accessTokenExpiresAt.toISOString()}::timestamptz)`,
        ),
        sql`, `,
      );
      const col = (c: { name: string }) => sql.identifier(c.name);
      const result = await adapter.run('storing refreshed tokens', (db) =>
        (db as unknown as { execute(q: unknown): Promise<{ rows: unknown[] }> }).execute(sql`
          UPDATE ${t} SET
            ${col(t.scopes)} = v.scopes,
            ${col(t.accessTokenEnc)} = v.access_enc,
            ${col(t.refreshTokenEnc)} = v.refresh_enc,
            ${col(t.keyId)} = v.key_id,
            ${col(t.accessExpiresAt)} = v.expires_at,
            ${col(t.updatedAt)} = ${now.toISOString()}::timestamptz,
            ${col(t.version)} = ${t.version} + 1,
            ${col(t.needsReauth)} = false,
            ${col(t.refreshLeaseOwner)} = NULL,
            ${col(t.refreshLeaseUntil)} = NULL
          FROM (VALUES ${values}) AS v(store_id, owner, scopes, access_enc, refresh_enc, key_id, expires_at)
          WHERE ${t.storeId} = v.store_id AND ${t.refreshLeaseOwner} = v.owner
          RETURNING ${t.storeId} AS store_id, ${t.version} AS version,
            ${t.installedAt} AS installed_at, ${t.platformInstalledAt} AS platform_installed_at`),
      );
      type Raw = {
        store_id: string;
        version: number | string;
        installed_at: Date | string;
        platform_installed_at: Date | string | null;
      };
      // Raw rows: the driver may hand timestamps back as Date or as text.
      const written = new Map<string, CompletedRow>();
      for (const row of result.rows as Raw[]) {
        written.set(row.store_id, {
          version: Number(row.version),
          installedAt: new Date(row.installed_at),
          platformInstalledAt:
            row.platform_installed_at === null ? null : new Date(row.platform_installed_at),
        });
      }
      return items.map(({ storeId }) => written.get(storeId) ?? null);
    };
  }

  return { installations, refreshLease };
}

export function createWebhookRepository(
  adapter: DialectAdapter,
  outbox: Pick<PurgeOutboxAdapter, 'add'>,
): WebhookAdapter<AnyDrizzle> {
  const t = adapter.tables.webhookDeliveries;
  const record = preparedOn<Array<{ webhookId: string }>>('store_app_webhook_record', (db) =>
    db
      .insert(t)
      .values({
        webhookId: sql.placeholder('webhookId'),
        topic: sql.placeholder('topic'),
        receivedAt: sql.placeholder('receivedAt'),
      })
      .onConflictDoNothing({ target: t.webhookId })
      .returning({ webhookId: t.webhookId }),
  );
  return {
    async runOnce({ webhookId, topic, receivedAt }, effects) {
      return adapter.transaction(async (tx) => {
        // On Postgres a concurrent insert of the same id waits on the row lock
        // and, once the first commits, conflicts: exactly one runs the effects.
        const values = { webhookId, topic, receivedAt };
        const inserted = await adapter.run('recording a webhook delivery', async (db) =>
          adapter.dialect === 'mysql'
            ? mysqlInsertIfAbsent(db, t, values, t.webhookId)
            : (await record(db).execute(values)).length === 1,
        );
        if (!inserted) return { duplicate: true } as const;
        // The outbox write joins this transaction (adapter.run follows it).
        const result = await effects({
          tx,
          addPendingPurge: (entry) => outbox.add(entry, receivedAt),
        });
        return { duplicate: false, result } as const;
      }, GROUPED_DELIVERY);
    },

    async prune(before) {
      const result = await adapter.run('pruning webhook deliveries', (db) =>
        db.delete(t).where(lt(t.receivedAt, before)),
      );
      return adapter.affected(result);
    },
  };
}

/** Expired claims are deleted at most this often per process, by whichever claim comes next. */
const CLAIM_PRUNE_INTERVAL_MS = 60_000;

export function createClaims(adapter: DialectAdapter): StorageAdapter['claimOnce'] {
  const t = adapter.tables.claims;
  const claim = preparedOn<Array<{ id: string }>>('store_app_claim', (db) =>
    db
      .insert(t)
      .values({
        namespace: sql.placeholder('namespace'),
        id: sql.placeholder('id'),
        expiresAt: sql.placeholder('expiresAt'),
      })
      .onConflictDoUpdate({
        target: [t.namespace, t.id],
        // The row being inserted (its expiry, already encoded): same SQL on both dialects.
        set: { expiresAt: sql`excluded.expires_at` },
        setWhere: lte(t.expiresAt, sql.placeholder('now')),
      })
      .returning({ id: t.id }),
  );
  let lastPrune = 0;
  return async function claimOnce(namespace, id, expiresAt, now) {
    if (now.getTime() - lastPrune >= CLAIM_PRUNE_INTERVAL_MS) {
      lastPrune = now.getTime();
      await adapter.run('pruning expired claims', (db) => db.delete(t).where(lt(t.expiresAt, now)));
    }
    // One statement, atomic on both dialects: a new id inserts; an id whose
    // claim expired is taken over; an unexpired claim updates nothing and
    // returns no row. Concurrent claimers of one id conflict on the primary
    // key, so exactly one of them gets a row back.
    return adapter.run('claiming an id', async (db) =>
      adapter.dialect === 'mysql'
        ? mysqlClaim(db, t, { namespace, id, expiresAt }, now)
        : // A placeholder in a comparison gets no column encoding: encode `now` here.
          (
            await claim(db).execute({
              namespace,
              id,
              expiresAt,
              now: t.expiresAt.mapToDriverValue(now),
            })
          ).length === 1,
    );
  };
}

/**
 * Deletes the store's rows of the app's tables through `tx` (the purge's
 * transaction): the built-in storage's part of `effects`, run by the kit.
 */
export async function deleteStoreRows(
  adapter: DialectAdapter,
  scoped: readonly ScopedTable[],
  storeId: string,
): Promise<PurgeCounts> {
  const counts: PurgeCounts = {};
  for (const { name, table, storeIdColumn } of scoped) {
    const result = await adapter.run(`purging table ${name}`, (db) =>
      db.delete(table).where(eq(storeIdColumn, storeId)),
    );
    counts[name] = adapter.affected(result);
  }
  return counts;
}

/** How long a scrub waits for more purges of a burst to join it (adds that much to one purge). */
const SCRUB_GATHER_MS = 200;

export function createPurge(adapter: DialectAdapter): StorageAdapter<AnyDrizzle>['purge'] {
  const t = adapter.tables;
  const kitTables: string[] = [getTableName(t.installations), getTableName(t.sessions)];
  // One VACUUM / checkpoint for the purges of a burst, not one per purge.
  const scrub = createScrubBatch((tables) => adapter.scrub(tables), SCRUB_GATHER_MS);
  return async function purge(storeId, options) {
    const result = await purgeInTransaction(storeId, options);
    options.onCommitted?.();
    if (!result.purged) return result;
    if (options.sweep && !Object.values(result.counts).some((n) => n > 0)) return result;
    // After the commit, outside the transaction: deleted rows must not stay
    // readable on disk (SQLite free pages and WAL, Postgres dead tuples).
    // The app's counts are keyed by its table names (see deleteStoreRows).
    const appTables = Object.keys(result.counts).filter(
      (name) => !kitTables.includes(name) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name),
    );
    return { ...result, scrubbed: await scrub([...appTables, ...kitTables]) };
  };

  /**
   * Settles the purge's outbox entry inside its transaction (see
   * `AdapterPurgeOptions.outbox`): the sweep commits with the purge or not at all.
   */
  async function settleOutbox(options: AdapterPurgeOptions<AnyDrizzle>, started: number) {
    const { outbox } = options;
    if (!outbox) return;
    const p = t.pendingPurges;
    const where = eq(p.eventId, outbox.eventId);
    await adapter.run('scheduling the purge horizon sweep', (db) =>
      outbox.sweepAfterMs > 0
        ? db
            .update(p)
            .set({
              kind: 'sweep',
              attempts: 0,
              // `now` carried to the commit on the monotonic clock, then the horizon.
              nextAttemptAt: new Date(
                options.now.getTime() +
                  Math.ceil(performance.now() - started) +
                  outbox.sweepAfterMs,
              ),
              lastError: null,
              leaseOwner: null,
              leaseUntil: null,
            })
            .where(where)
        : db.delete(p).where(where),
    );
  }

  function purgeInTransaction(
    storeId: string,
    options: AdapterPurgeOptions<AnyDrizzle>,
  ): Promise<PurgeResult> {
    const started = performance.now();
    return adapter.transaction(async (tx) => {
      // Lock the installation row first: a reinstall committing while this
      // purge runs then waits and lands after it, instead of being deleted by
      // an uninstall event older than it. (SQLite's BEGIN IMMEDIATE already
      // serialises writers; Postgres needs FOR UPDATE.)
      const rows = await adapter.run('reading an installation', (db) => {
        const query = db
          .select({
            installedAt: t.installations.installedAt,
            platformInstalledAt: t.installations.platformInstalledAt,
          })
          .from(t.installations)
          .where(eq(t.installations.storeId, storeId));
        return adapter.dialect !== 'sqlite'
          ? (query as unknown as { for(strength: 'update'): typeof query }).for('update')
          : query;
      });
      // One clock: the platform's install time when known (the event's time is
      // the platform's), else ours for rows written before it was recorded.
      const installedAt = rows[0]?.platformInstalledAt ?? rows[0]?.installedAt;
      const before = options.ifInstalledBefore;
      // The purge this sweep follows deleted the installation it was for: any
      // row now is a reinstall, whatever its install time says (the platform's
      // Date header has whole seconds; a reinstall in the uninstall's second
      // would compare as older).
      if (options.sweep && rows.length > 0) return { purged: false, counts: {} };
      if (before !== undefined) {
        if (installedAt !== undefined && installedAt.getTime() > before.getTime()) {
          return { purged: false, counts: {} };
        }
        // No installation, and a purge already recorded for this event or a
        // later one: a duplicate delivery (or token_revoked) racing the first
        // purge; doing it again would run the app's onPurge twice. Event times
        // are compared with event times (the platform's clock), never with our
        // clock. App rows left without an installation and without such a purge
        // are still deleted below.
        if (installedAt === undefined && !options.sweep) {
          const done = await adapter.run('reading the purge audit', (db) =>
            db
              .select({ id: t.purgeAudit.id })
              .from(t.purgeAudit)
              .where(and(eq(t.purgeAudit.storeId, storeId), gte(t.purgeAudit.eventAt, before)))
              .limit(1),
          );
          if (done.length > 0) return { purged: false, counts: {} };
        }
      }
      const counts: PurgeCounts = { ...((await options.effects?.(tx)) ?? {}) };
      // With no row to lock above, a reinstall may still insert meanwhile on
      // Postgres: an uninstall event never deletes an installation newer than it.
      const installation =
        before === undefined
          ? eq(t.installations.storeId, storeId)
          : and(
              eq(t.installations.storeId, storeId),
              or(
                lte(t.installations.platformInstalledAt, before),
                and(
                  isNull(t.installations.platformInstalledAt),
                  lte(t.installations.installedAt, before),
                ),
              ),
            );
      const kit = [
        [t.installations, installation],
        [t.sessions, eq(t.sessions.storeId, storeId)],
      ] as const;
      for (const [table, where] of kit) {
        const name = getTableName(table);
        const result = await adapter.run(`purging table ${name}`, (db) =>
          db.delete(table).where(where),
        );
        counts[name] = adapter.affected(result);
      }
      // A sweep that found nothing leaves no trace: most find nothing.
      if (options.sweep && !Object.values(counts).some((n) => n > 0)) {
        await settleOutbox(options, started);
        return { purged: true, counts };
      }
      await adapter.run('writing the purge audit row', (db) =>
        db
          .insert(t.purgeAudit)
          .values({ storeId, purgedAt: options.now, eventAt: before ?? null, counts }),
      );
      await settleOutbox(options, started);
      return { purged: true, counts };
    }, RETRY_LOCK_CONFLICTS);
  }
}
