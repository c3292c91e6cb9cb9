/**
 * The kit's repositories, written once against the dialect adapter. Every
 * token and verifier is encrypted before it is written and decrypted after it
 * is read; every DB failure surfaces as StorageError (see adapter.run).
 */
import { createHash } from 'node:crypto';
import {
  and,
  asc,
  eq,
  getTableColumns,
  getTableName,
  gte,
  is,
  isNull,
  lt,
  lte,
  or,
  sql,
} from 'drizzle-orm';
import { MySqlTable } from 'drizzle-orm/mysql-core';
import { PgTable } from 'drizzle-orm/pg-core';
import { SQLiteTable } from 'drizzle-orm/sqlite-core';
import { type TokenCipher, TokenDecryptionError } from '../crypto/index.js';
import { ConfigError, StorageError } from '../errors/index.js';
import type { Db, DialectAdapter, KitTables } from './adapter.js';
import { mysqlClaim, mysqlInsertIfAbsent, mysqlUpsert } from './mysql-statements.js';
import type {
  Dialect,
  Installation,
  InstallationRepository,
  OAuthStateRecord,
  OAuthStateRepository,
  PurgeOptions,
  PurgeResult,
  StoreScopedTable,
  TokenSet,
  WebhookRepository,
} from './types.js';

/**
 * For the kit's own transactions: a deadlock victim is rolled back whole
 * (effects and onPurge included), so running it again is what a redelivery
 * or the outbox's next attempt would do anyway.
 */
const RETRY_LOCK_CONFLICTS = { retryOnLockConflict: true } as const;

type InstallationRow = KitTables['installations']['$inferSelect'];
type OAuthStateRow = KitTables['oauthStates']['$inferSelect'];

/** Where tokens are bound in the JWE `sid` header of OAuth state values. */
const stateBinding = (hash: string) => `oauth-state:${hash}`;
const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');
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

export function createInstallationRepository(
  adapter: DialectAdapter,
  cipher: TokenCipher,
): InstallationRepository {
  const t = adapter.tables.installations;

  async function decode(row: InstallationRow): Promise<Installation> {
    // Two ciphertexts (each token has its column, so rotate-keys and refresh
    // rewrite them alike); decrypted side by side, one wait instead of two.
    const [accessToken, refreshToken] = await Promise.all([
      cipher.decrypt(row.accessTokenEnc, row.storeId),
      row.refreshTokenEnc === null ? null : cipher.decrypt(row.refreshTokenEnc, row.storeId),
    ]);
    return {
      storeId: row.storeId,
      scopes: splitScopes(row.scopes),
      accessToken,
      refreshToken,
      accessTokenExpiresAt: row.accessExpiresAt,
      installedAt: row.installedAt,
      updatedAt: row.updatedAt,
      version: row.version,
      needsReauth: row.needsReauth,
      platformInstalledAt: row.platformInstalledAt ?? null,
    };
  }

  async function encode(storeId: string, tokens: TokenSet) {
    if (
      !(tokens.accessTokenExpiresAt instanceof Date) ||
      Number.isNaN(+tokens.accessTokenExpiresAt)
    ) {
      // A missing expiry would never be refreshed again; refuse it here.
      throw new ConfigError('accessTokenExpiresAt', 'must be a valid Date when storing tokens');
    }
    return {
      scopes: joinScopes(tokens.scopes),
      accessTokenEnc: await cipher.encrypt(tokens.accessToken, storeId),
      refreshTokenEnc:
        tokens.refreshToken === null ? null : await cipher.encrypt(tokens.refreshToken, storeId),
      keyId: cipher.currentKid,
      accessExpiresAt: tokens.accessTokenExpiresAt,
    };
  }

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

  return {
    async get(storeId) {
      const row = await readRow(storeId);
      return row ? decode(row) : null;
    },

    async list() {
      const rows = await adapter.run('listing installations', (db) =>
        db.select().from(t).orderBy(asc(t.storeId)),
      );
      return Promise.all(rows.map(decode));
    },

    async upsert(storeId, tokens, metadata = {}) {
      const values = {
        ...(await encode(storeId, tokens)),
        platformInstalledAt: metadata.platformInstalledAt ?? null,
      };
      const now = new Date();
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
        return decode(row!);
      }
      const rows = await adapter.run('storing an installation', (db) =>
        db.insert(t).values(insert).onConflictDoUpdate({ target: t.storeId, set }).returning(),
      );
      return decode(rows[0]!);
    },

    async acquireRefreshLease(storeId, expectedVersion, owner, leaseMs) {
      const now = new Date();
      const result = await adapter.run('taking the refresh lease', (db) =>
        db
          .update(t)
          .set({ refreshLeaseOwner: owner, refreshLeaseUntil: new Date(now.getTime() + leaseMs) })
          .where(
            and(
              eq(t.storeId, storeId),
              eq(t.version, expectedVersion),
              or(
                isNull(t.refreshLeaseOwner),
                isNull(t.refreshLeaseUntil),
                lt(t.refreshLeaseUntil, now),
                eq(t.refreshLeaseOwner, owner),
              ),
            ),
          ),
      );
      return adapter.affected(result) === 1;
    },

    async completeRefresh(storeId, owner, tokens) {
      const values = await encode(storeId, tokens);
      const update = (db: Db) =>
        db
          .update(t)
          .set({
            ...values,
            updatedAt: new Date(),
            version: sql`${t.version} + 1`,
            refreshLeaseOwner: null,
            refreshLeaseUntil: null,
          })
          .where(and(eq(t.storeId, storeId), eq(t.refreshLeaseOwner, owner)));
      if (adapter.dialect === 'mysql') {
        // No RETURNING: update and re-read in one transaction (see upsert).
        const row = await adapter.transaction(async () => {
          const result = await adapter.run('storing refreshed tokens', update);
          return adapter.affected(result) === 1 ? readRow(storeId) : undefined;
        }, RETRY_LOCK_CONFLICTS);
        return row ? decode(row) : null;
      }
      const rows = await adapter.run('storing refreshed tokens', (db) => update(db).returning());
      return rows[0] ? decode(rows[0]) : null;
    },

    async releaseRefreshLease(storeId, owner) {
      await adapter.run('releasing the refresh lease', (db) =>
        db
          .update(t)
          .set({ refreshLeaseOwner: null, refreshLeaseUntil: null })
          .where(and(eq(t.storeId, storeId), eq(t.refreshLeaseOwner, owner))),
      );
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

    async listStoreIds() {
      const rows = await adapter.run('listing installations', (db) =>
        db.select({ storeId: t.storeId }).from(t).orderBy(asc(t.storeId)),
      );
      return rows.map((r) => r.storeId);
    },

    async reencrypt(storeId) {
      // Compare-and-swap on the ciphertext: a refresh committing meanwhile wins,
      // and the next pass sees its (already current) key.
      for (let attempt = 0; attempt < 5; attempt++) {
        const row = await readRow(storeId);
        if (!row) return false;
        const stale =
          cipher.needsReencrypt(row.accessTokenEnc) ||
          (row.refreshTokenEnc !== null && cipher.needsReencrypt(row.refreshTokenEnc));
        if (!stale) return false;
        const access = await cipher.decrypt(row.accessTokenEnc, storeId);
        const refresh =
          row.refreshTokenEnc === null ? null : await cipher.decrypt(row.refreshTokenEnc, storeId);
        const accessTokenEnc = await cipher.encrypt(access, storeId);
        const refreshTokenEnc = refresh === null ? null : await cipher.encrypt(refresh, storeId);
        const result = await adapter.run('re-encrypting an installation', (db) =>
          db
            .update(t)
            .set({ accessTokenEnc, refreshTokenEnc, keyId: cipher.currentKid })
            .where(
              and(
                eq(t.storeId, storeId),
                eq(t.version, row.version),
                eq(t.accessTokenEnc, row.accessTokenEnc),
              ),
            ),
        );
        if (adapter.affected(result) === 1) return true;
      }
      return false;
    },

    async delete(storeId) {
      const result = await adapter.run('deleting an installation', (db) =>
        db.delete(t).where(eq(t.storeId, storeId)),
      );
      return adapter.affected(result) > 0;
    },
  };
}

export function createOAuthStateRepository(
  adapter: DialectAdapter,
  cipher: TokenCipher,
): OAuthStateRepository {
  const t = adapter.tables.oauthStates;
  // MySQL never had the table (it is unused and being removed): nothing pending.
  if (t === undefined) return noOAuthStates();
  const deleteReturning = preparedOn<OAuthStateRow[]>('store_app_oauth_state_consume', (db) =>
    db
      .delete(t)
      .where(eq(t.stateHash, sql.placeholder('stateHash')))
      .returning(),
  );
  return {
    async create(record) {
      const stateHash = sha256(record.state);
      const binding = stateBinding(stateHash);
      const codeVerifierEnc = await cipher.encrypt(record.codeVerifier, binding);
      const browserBindingEnc = await cipher.encrypt(record.browserBinding, binding);
      await adapter.run('storing OAuth state', (db) =>
        db.insert(t).values({
          stateHash,
          codeVerifierEnc,
          browserBindingEnc,
          storeId: record.storeId,
          retried: record.retried,
          returnTo: record.returnTo,
          expiresAt: record.expiresAt,
          createdAt: new Date(),
        }),
      );
    },

    async consume(state) {
      const stateHash = sha256(state);
      // DELETE … RETURNING: of two concurrent callbacks exactly one gets the row.
      const rows = await adapter.run('consuming OAuth state', (db) =>
        deleteReturning(db).execute({ stateHash }),
      );
      const row = rows[0];
      if (!row || row.expiresAt.getTime() <= Date.now()) return null;
      const binding = stateBinding(stateHash);
      const record: OAuthStateRecord = {
        state,
        codeVerifier: await cipher.decrypt(row.codeVerifierEnc, binding),
        storeId: row.storeId,
        browserBinding: await cipher.decrypt(row.browserBindingEnc, binding),
        retried: row.retried,
        returnTo: row.returnTo,
        expiresAt: row.expiresAt,
      };
      return record;
    },

    async deleteExpired(now) {
      const result = await adapter.run('deleting expired OAuth state', (db) =>
        db.delete(t).where(lte(t.expiresAt, now)),
      );
      return adapter.affected(result);
    },

    async reencryptAll() {
      const rows = await adapter.run('listing OAuth state', (db) =>
        db.select().from(t).orderBy(asc(t.stateHash)),
      );
      let changed = 0;
      let failed = 0;
      for (const row of rows) {
        if (
          !cipher.needsReencrypt(row.codeVerifierEnc) &&
          !cipher.needsReencrypt(row.browserBindingEnc)
        ) {
          continue;
        }
        const binding = stateBinding(row.stateHash);
        let codeVerifierEnc: string;
        let browserBindingEnc: string;
        try {
          codeVerifierEnc = await cipher.encrypt(
            await cipher.decrypt(row.codeVerifierEnc, binding),
            binding,
          );
          browserBindingEnc = await cipher.encrypt(
            await cipher.decrypt(row.browserBindingEnc, binding),
            binding,
          );
        } catch (err) {
          // A row written with a removed key: skip it (it expires soon anyway), count it.
          if (!(err instanceof TokenDecryptionError)) throw err;
          failed++;
          continue;
        }
        const result = await adapter.run('re-encrypting OAuth state', (db) =>
          db
            .update(t)
            .set({ codeVerifierEnc, browserBindingEnc })
            .where(and(eq(t.stateHash, row.stateHash), eq(t.codeVerifierEnc, row.codeVerifierEnc))),
        );
        changed += adapter.affected(result);
      }
      return { scanned: rows.length, changed, failed };
    },
  };
}

function noOAuthStates(): OAuthStateRepository {
  return {
    async create() {
      throw new StorageError('storing OAuth state is not supported on this database');
    },
    consume: async () => null,
    deleteExpired: async () => 0,
    reencryptAll: async () => ({ scanned: 0, changed: 0, failed: 0 }),
  };
}

export function createWebhookRepository(adapter: DialectAdapter): WebhookRepository {
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
    async runOnce(webhookId, topic, effects) {
      return adapter.transaction(async (tx) => {
        // On Postgres a concurrent insert of the same id waits on the row lock
        // and, once the first commits, conflicts: exactly one runs the effects.
        const values = { webhookId, topic, receivedAt: new Date() };
        const inserted = await adapter.run('recording a webhook delivery', async (db) =>
          adapter.dialect === 'mysql'
            ? mysqlInsertIfAbsent(db, t, values, t.webhookId)
            : (await record(db).execute(values)).length === 1,
        );
        if (!inserted) return { duplicate: true } as const;
        const result = await effects(tx);
        return { duplicate: false, result } as const;
      }, RETRY_LOCK_CONFLICTS);
    },

    async pruneDeliveries(before) {
      const result = await adapter.run('pruning webhook deliveries', (db) =>
        db.delete(t).where(lt(t.receivedAt, before)),
      );
      return adapter.affected(result);
    },
  };
}

/** Expired claims are deleted at most this often per process, by whichever claim comes next. */
const CLAIM_PRUNE_INTERVAL_MS = 60_000;
const CLAIM_PART_MAX = 256;

export function createClaims(
  adapter: DialectAdapter,
): (namespace: string, id: string, expiresAt: Date) => Promise<boolean> {
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
        setWhere: lt(t.expiresAt, sql.placeholder('now')),
      })
      .returning({ id: t.id }),
  );
  let lastPrune = 0;
  return async function claimOnce(namespace, id, expiresAt) {
    if (
      typeof namespace !== 'string' ||
      typeof id !== 'string' ||
      namespace.length === 0 ||
      id.length === 0 ||
      namespace.length > CLAIM_PART_MAX ||
      id.length > CLAIM_PART_MAX ||
      !(expiresAt instanceof Date) ||
      Number.isNaN(expiresAt.getTime())
    ) {
      throw new ConfigError(
        'claimOnce',
        'needs a namespace and an id (1-256 characters) and a valid expiry date',
      );
    }
    const now = new Date();
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

export interface ScopedTable {
  readonly name: string;
  readonly table: StoreScopedTable;
  // biome-ignore lint/suspicious/noExplicitAny: a Drizzle column of either dialect.
  readonly storeIdColumn: any;
}

const KIT_TABLES = new Set([
  'store_app_installations',
  'store_app_sessions',
  'store_app_oauth_states',
  'store_app_webhook_deliveries',
  'store_app_purge_audit',
  'store_app_claims',
  'store_app_pending_purges',
]);

const TABLE_KINDS = {
  sqlite: [SQLiteTable, 'sqliteTable'],
  postgres: [PgTable, 'pgTable'],
  mysql: [MySqlTable, 'mysqlTable'],
} as const;

/**
 * Checks the app's store-scoped tables once at start: each must be a Drizzle
 * table of the active dialect with a column whose SQL name is `store_id`.
 */
export function validateStoreScopedTables(
  tables: readonly StoreScopedTable[],
  dialect: Dialect,
  setting = 'storeScopedTables',
): ScopedTable[] {
  const seen = new Set<string>();
  return tables.map((table, i) => {
    const [expected, builder] = TABLE_KINDS[dialect];
    if (!is(table, expected)) {
      throw new ConfigError(
        setting,
        `entry #${i + 1} is not a Drizzle ${builder}; ` +
          `DATABASE_URL selects ${dialect}, so declare the app's tables with that dialect`,
      );
    }
    const name = getTableName(table);
    if (KIT_TABLES.has(name)) {
      throw new ConfigError(setting, `"${name}" is a kit table; list only the app's own tables`);
    }
    if (seen.has(name)) throw new ConfigError(setting, `"${name}" is listed twice`);
    seen.add(name);
    const column = Object.values(getTableColumns(table)).find(
      (c) => (c as { name?: string }).name === 'store_id',
    );
    if (column === undefined) {
      throw new ConfigError(
        setting,
        `table "${name}" has no column named store_id; add one (the purge deletes by it)`,
      );
    }
    return { name, table, storeIdColumn: column };
  });
}

export function createPurge(adapter: DialectAdapter) {
  const t = adapter.tables;
  // kit.purge passes the same array every time: check it once, not per purge.
  const checked = new WeakMap<readonly StoreScopedTable[], ScopedTable[]>();
  const scopedTables = (tables: readonly StoreScopedTable[]): ScopedTable[] => {
    let scoped = checked.get(tables);
    if (!scoped) {
      scoped = validateStoreScopedTables(tables, adapter.dialect);
      checked.set(tables, scoped);
    }
    return scoped;
  };
  return async function purge(
    storeId: string,
    options: PurgeOptions = { tables: [] },
  ): Promise<PurgeResult> {
    const scoped = scopedTables(options.tables ?? []);
    const result = await purgeInTransaction(storeId, options, scoped);
    if (!result.purged) return result;
    // After the commit, outside the transaction: deleted rows must not stay
    // readable on disk (SQLite free pages and WAL, Postgres dead tuples).
    const touched = [
      ...scoped.map((s) => s.name),
      getTableName(t.installations),
      getTableName(t.sessions),
      ...(t.oauthStates ? [getTableName(t.oauthStates)] : []),
    ];
    return { ...result, scrubbed: await adapter.scrub(touched) };
  };

  function purgeInTransaction(
    storeId: string,
    options: PurgeOptions,
    scoped: ScopedTable[],
  ): Promise<PurgeResult> {
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
        if (installedAt === undefined) {
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
      const counts: Record<string, number> = {};
      for (const { name, table, storeIdColumn } of scoped) {
        const result = await adapter.run(`purging table ${name}`, (db) =>
          db.delete(table).where(eq(storeIdColumn, storeId)),
        );
        counts[name] = adapter.affected(result);
      }
      if (options.onPurge) await options.onPurge(storeId, tx);
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
        ...(t.oauthStates ? [[t.oauthStates, eq(t.oauthStates.storeId, storeId)] as const] : []),
      ] as const;
      for (const [table, where] of kit) {
        const name = getTableName(table);
        const result = await adapter.run(`purging table ${name}`, (db) =>
          db.delete(table).where(where),
        );
        counts[name] = adapter.affected(result);
      }
      await adapter.run('writing the purge audit row', (db) =>
        db
          .insert(t.purgeAudit)
          .values({ storeId, purgedAt: new Date(), eventAt: before ?? null, counts }),
      );
      return { purged: true, counts };
    }, RETRY_LOCK_CONFLICTS);
  }
}
