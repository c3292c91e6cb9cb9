/**
 * The kit's own storage behaviour on the built-in dialects, run on a SQLite
 * file, Postgres and MariaDB: token encryption above the adapter, app tables
 * in purges and transactions, the express-session store. The adapter contract
 * itself is the conformance suite (src/testing, run by ./conformance.test.ts).
 * `open` gives a fresh migrated Storage on the same database each call.
 */

import { executionAsyncId } from 'node:async_hooks';
import { eq, sql } from 'drizzle-orm';
import {
  int as myInt,
  mysqlTable,
  text as myText,
  varchar as myVarchar,
} from 'drizzle-orm/mysql-core';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';
import session from 'express-session';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StoreAppError } from '../../src/errors/index.js';
import type { Storage, TokenSet } from '../../src/storage/index.js';
import { purgeAudit as mysqlAudit } from '../../src/storage/schema/mysql.js';
import { purgeAudit as pgAudit } from '../../src/storage/schema/postgres.js';
import { purgeAudit as sqliteAudit } from '../../src/storage/schema/sqlite.js';
import { expressSessionStore } from '../helpers/express-session-store.js';

export interface SuiteContext {
  dialect: 'sqlite' | 'postgres' | 'mysql';
  /** Opens a storage on the suite's database (migrated). */
  open(keys?: readonly string[]): Promise<Storage>;
}

const sqliteNotes = sqliteTable('app_notes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  shop: text('store_id').notNull(),
  body: text('body').notNull(),
});
const sqliteTags = sqliteTable('app_tags', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  storeId: text('store_id').notNull(),
  tag: text('tag').notNull(),
});
const pgNotes = pgTable('app_notes', {
  id: pgInteger('id').primaryKey().generatedAlwaysAsIdentity(),
  shop: pgText('store_id').notNull(),
  body: pgText('body').notNull(),
});
const pgTags = pgTable('app_tags', {
  id: pgInteger('id').primaryKey().generatedAlwaysAsIdentity(),
  storeId: pgText('store_id').notNull(),
  tag: pgText('tag').notNull(),
});

const mysqlNotes = mysqlTable('app_notes', {
  id: myInt('id').primaryKey().autoincrement(),
  shop: myVarchar('store_id', { length: 255 }).notNull(),
  body: myText('body').notNull(),
});
const mysqlTags = mysqlTable('app_tags', {
  id: myInt('id').primaryKey().autoincrement(),
  storeId: myVarchar('store_id', { length: 255 }).notNull(),
  tag: myText('tag').notNull(),
});

const APP_TABLES = {
  sqlite: {
    notes: sqliteNotes,
    tags: sqliteTags,
    audit: sqliteAudit,
    ddl: [
      'CREATE TABLE IF NOT EXISTS app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)',
      'CREATE TABLE IF NOT EXISTS app_tags (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, tag TEXT NOT NULL)',
    ],
  },
  postgres: {
    notes: pgNotes,
    tags: pgTags,
    audit: pgAudit,
    ddl: [
      'CREATE TABLE IF NOT EXISTS app_notes (id integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY, store_id text NOT NULL, body text NOT NULL)',
      'CREATE TABLE IF NOT EXISTS app_tags (id integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY, store_id text NOT NULL, tag text NOT NULL)',
    ],
  },
  mysql: {
    notes: mysqlNotes,
    tags: mysqlTags,
    audit: mysqlAudit,
    ddl: [
      'CREATE TABLE IF NOT EXISTS app_notes (id int AUTO_INCREMENT PRIMARY KEY, store_id varchar(255) NOT NULL, body text NOT NULL, KEY (store_id))',
      'CREATE TABLE IF NOT EXISTS app_tags (id int AUTO_INCREMENT PRIMARY KEY, store_id varchar(255) NOT NULL, tag text NOT NULL, KEY (store_id))',
    ],
  },
} as const;

let counter = 0;
const uniqueStore = (label: string) => `${label}-${Date.now().toString(36)}-${++counter}`;

function tokens(suffix: string, expiresInMs = 3_600_000): TokenSet {
  return {
    scopes: ['read_products', 'write_orders'],
    accessToken: `at_${suffix}_${generateKey()}`,
    refreshToken: `rt_${suffix}_${generateKey()}`,
    accessTokenExpiresAt: new Date(Date.now() + expiresInMs),
  };
}

export function defineStorageSuite(ctx: SuiteContext) {
  let storage: Storage;
  // biome-ignore lint/suspicious/noExplicitAny: the app tables of the active dialect.
  let notes: any;
  // biome-ignore lint/suspicious/noExplicitAny: the app tables of the active dialect.
  let tags: any;

  beforeAll(async () => {
    storage = await ctx.open();
    ({ notes, tags } = APP_TABLES[ctx.dialect]);
    for (const stmt of APP_TABLES[ctx.dialect].ddl) {
      if (ctx.dialect === 'sqlite') storage.db.run(sql.raw(stmt));
      else await storage.db.execute(sql.raw(stmt));
    }
  });
  afterAll(async () => {
    await storage?.close();
  });

  describe('installations', () => {
    it('stores, reads and lists an installation with decrypted tokens', async () => {
      const storeId = uniqueStore('crud');
      const set = tokens('crud');
      const created = await storage.installations.upsert(storeId, set);
      expect(created).toMatchObject({
        storeId,
        scopes: set.scopes,
        accessToken: set.accessToken,
        refreshToken: set.refreshToken,
        version: 1,
        needsReauth: false,
      });
      expect(created.accessTokenExpiresAt.getTime()).toBe(set.accessTokenExpiresAt.getTime());
      const read = await storage.installations.get(storeId);
      expect(read).toEqual(created);
      expect(await storage.installations.get(uniqueStore('missing'))).toBeNull();
      expect(await storage.installations.listStoreIds()).toContain(storeId);
      expect((await storage.installations.list()).map((i) => i.storeId)).toContain(storeId);
    });

    it('keeps a null refresh token null', async () => {
      const storeId = uniqueStore('norefresh');
      await storage.installations.upsert(storeId, { ...tokens('n'), refreshToken: null });
      expect((await storage.installations.get(storeId))?.refreshToken).toBeNull();
    });

    it('refuses tokens without a valid expiry', async () => {
      const bad = { ...tokens('x'), accessTokenExpiresAt: new Date(Number.NaN) };
      await expect(storage.installations.upsert(uniqueStore('bad'), bad)).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
    });
  });

  describe('refresh lease (compare-and-swap)', () => {
    it('completeRefresh commits for the holder and bumps version; a lost lease gets null', async () => {
      const storeId = uniqueStore('complete');
      const inst = await storage.installations.upsert(storeId, tokens('c'));
      await storage.installations.acquireRefreshLease(storeId, inst.version, 'a', -1000);
      await storage.installations.acquireRefreshLease(storeId, inst.version, 'b', 60_000);
      expect(await storage.installations.completeRefresh(storeId, 'a', tokens('lost'))).toBeNull();
      const fresh = tokens('won');
      const done = await storage.installations.completeRefresh(storeId, 'b', fresh);
      expect(done).toMatchObject({ accessToken: fresh.accessToken, version: inst.version + 1 });
      // What it answers (the tokens in hand, not decrypted back) is what a later read decrypts.
      const stored = await storage.installations.get(storeId);
      expect(stored).toMatchObject({
        accessToken: fresh.accessToken,
        refreshToken: fresh.refreshToken,
        scopes: done!.scopes,
        version: done!.version,
        needsReauth: false,
      });
      expect(stored!.accessTokenExpiresAt.getTime()).toBe(done!.accessTokenExpiresAt.getTime());
      // The lease is cleared and the old version no longer matches.
      expect(
        await storage.installations.acquireRefreshLease(storeId, inst.version, 'c', 1000),
      ).toBe(false);
      expect(
        await storage.installations.acquireRefreshLease(storeId, done!.version, 'c', 1000),
      ).toBe(true);
    });
  });

  describe('webhook dedupe', () => {
    it('effects that throw roll back the id and their writes, so a retry runs', async () => {
      const id = `msg_${generateKey()}`;
      const storeId = uniqueStore('wh');
      await expect(
        storage.webhooks.runOnce(id, 't', async (tx) => {
          await tx.insert(notes).values({ shop: storeId, body: 'half' });
          throw new Error('handler failed');
        }),
      ).rejects.toThrow('handler failed');
      expect(await countRows('app_notes', storeId)).toBe(0);
      const retry = await storage.webhooks.runOnce(id, 't', async () => 'ok');
      expect(retry).toEqual({ duplicate: false, result: 'ok' });
    });
  });

  async function countRows(table: string, storeId: string): Promise<number> {
    const stmt = sql`select count(*) as n from ${sql.identifier(table)} where store_id = ${storeId}`;
    const rows =
      ctx.dialect === 'sqlite'
        ? storage.db.all(stmt)
        : ctx.dialect === 'mysql'
          ? (await storage.db.execute(stmt))[0]
          : (await storage.db.execute(stmt)).rows;
    return Number(rows[0].n);
  }

  describe('purge', () => {
    async function seed(storeId: string) {
      await storage.installations.upsert(storeId, tokens(storeId));
      await storage.db.insert(notes).values([
        { shop: storeId, body: 'n1' },
        { shop: storeId, body: 'n2' },
      ]);
      await storage.db.insert(tags).values({ storeId, tag: 't1' });
      await seedSession(storeId);
    }

    function seedSession(storeId: string) {
      return new Promise<void>((resolve, reject) =>
        expressSessionStore(storage.sessions({ pruneIntervalMs: 0 })).set(
          `sid-${storeId}`,
          { cookie: { originalMaxAge: 60_000 }, storeId } as never,
          (err) => (err ? reject(err) : resolve()),
        ),
      );
    }

    async function countFor(storeId: string) {
      const q = (table: string) => countRows(table, storeId);
      return {
        notes: await q('app_notes'),
        tags: await q('app_tags'),
        installations: await q('store_app_installations'),
        sessions: await q('store_app_sessions'),
      };
    }

    it('deletes everything of one store, keeps the other, audits counts, is idempotent', async () => {
      const gone = uniqueStore('purge-gone');
      const kept = uniqueStore('purge-kept');
      await seed(gone);
      await seed(kept);
      const result = await storage.purge(gone, { tables: [notes, tags] });
      expect(result.purged).toBe(true);
      expect(result.counts).toEqual({
        app_notes: 2,
        app_tags: 1,
        store_app_installations: 1,
        store_app_sessions: 1,
      });
      expect(await countFor(gone)).toEqual({ notes: 0, tags: 0, installations: 0, sessions: 0 });
      expect(await countFor(kept)).toEqual({ notes: 2, tags: 1, installations: 1, sessions: 1 });
      const again = await storage.purge(gone, { tables: [notes, tags] });
      expect(again.purged).toBe(true);
      expect(Object.values(again.counts).every((n) => n === 0)).toBe(true);

      const audit = await storage.db
        .select()
        .from(APP_TABLES[ctx.dialect].audit)
        .where(sql`store_id = ${gone}`);
      expect(audit.length).toBe(2);
      const first = audit.find((a: { counts: Record<string, number> }) => a.counts.app_notes === 2);
      expect(first).toBeDefined();
      expect(Object.keys(first)).toEqual(['id', 'storeId', 'purgedAt', 'eventAt', 'counts']);
    });

    it('onPurge runs inside the transaction', async () => {
      const storeId = uniqueStore('purge-hook');
      await seed(storeId);
      let seen: string | undefined;
      await storage.purge(storeId, {
        tables: [notes],
        onPurge: async (id, tx) => {
          seen = id;
          await tx.delete(tags).where(eq(tags.storeId, id));
        },
      });
      expect(seen).toBe(storeId);
      expect(await countFor(storeId)).toMatchObject({ tags: 0, notes: 0 });
    });

    it('rolls back everything when onPurge throws', async () => {
      const storeId = uniqueStore('purge-rollback');
      await seed(storeId);
      await expect(
        storage.purge(storeId, {
          tables: [notes, tags],
          onPurge: () => {
            throw new Error('external system down');
          },
        }),
      ).rejects.toThrow('external system down');
      expect(await countFor(storeId)).toEqual({ notes: 2, tags: 1, installations: 1, sessions: 1 });
      // The retry completes the purge.
      expect((await storage.purge(storeId, { tables: [notes, tags] })).purged).toBe(true);
      expect(await countFor(storeId)).toEqual({ notes: 0, tags: 0, installations: 0, sessions: 0 });
    });

    it('the purge outbox: add once per event, list, due, failure with backoff, complete', async () => {
      const storeId = uniqueStore('outbox');
      const eventId = `evt-${storeId}`;
      const eventAt = new Date(Date.now() - 5000);
      await storage.webhooks.runOnce(eventId, 'app.uninstalled', async (_tx, delivery) => {
        await delivery.addPendingPurge({ eventId, storeId, eventAt });
      });
      await storage.pendingPurges.add({ eventId, storeId, eventAt });
      const mine = async () =>
        (await storage.pendingPurges.list()).filter((p) => p.eventId === eventId);
      expect(await mine()).toMatchObject([
        { eventId, storeId, eventAt, attempts: 0, lastError: null },
      ]);
      expect((await storage.pendingPurges.due(new Date(), 1000)).map((p) => p.eventId)).toContain(
        eventId,
      );
      const later = new Date(Date.now() + 60_000);
      await storage.pendingPurges.recordFailure(eventId, later, 'STORAGE_UNAVAILABLE');
      expect(await mine()).toMatchObject([
        { attempts: 1, nextAttemptAt: later, lastError: 'STORAGE_UNAVAILABLE' },
      ]);
      expect(
        (await storage.pendingPurges.due(new Date(), 1000)).map((p) => p.eventId),
      ).not.toContain(eventId);
      await storage.pendingPurges.complete(eventId);
      expect(await mine()).toEqual([]);
    });

    it('refuses a table without a store_id column and a table of the other dialect', async () => {
      const bad =
        ctx.dialect === 'sqlite'
          ? sqliteTable('app_bad', { id: integer('id').primaryKey(), owner: text('owner') })
          : ctx.dialect === 'mysql'
            ? mysqlTable('app_bad', { id: myInt('id').primaryKey(), owner: myText('owner') })
            : pgTable('app_bad', { id: pgInteger('id').primaryKey(), owner: pgText('owner') });
      await expect(storage.purge('x', { tables: [bad] })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
      const wrong = ctx.dialect === 'sqlite' ? pgNotes : sqliteNotes;
      await expect(storage.purge('x', { tables: [wrong] })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
    });
  });

  describe('claimOnce', () => {
    it('refuses an empty id with a coded error', async () => {
      await expect(storage.claimOnce('launch-jti', '', new Date())).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
    });
  });

  describe('transaction', () => {
    it('commits together and rolls back together', async () => {
      const storeId = uniqueStore('tx');
      await storage.transaction(async (tx) => {
        await tx.insert(notes).values({ shop: storeId, body: 'a' });
        await storage.installations.upsert(storeId, tokens('tx'));
      });
      expect(await storage.installations.get(storeId)).not.toBeNull();
      const other = uniqueStore('tx-rb');
      await expect(
        storage.transaction(async (tx) => {
          await tx.insert(notes).values({ shop: other, body: 'a' });
          await storage.installations.upsert(other, tokens('rb'));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect(await storage.installations.get(other)).toBeNull();
    });

    it('a nested transaction is a savepoint: its failure undoes only its own writes', async () => {
      const outer = uniqueStore('tx-outer');
      const inner = uniqueStore('tx-inner');
      await storage.transaction(async () => {
        await storage.installations.upsert(outer, tokens('o'));
        await storage
          .transaction(async () => {
            await storage.installations.upsert(inner, tokens('i'));
            throw new Error('inner fails');
          })
          .catch(() => undefined);
      });
      expect(await storage.installations.get(outer)).not.toBeNull();
      expect(await storage.installations.get(inner)).toBeNull();
    });

    it('unrelated operations wait for an open transaction instead of landing inside it', async () => {
      const inside = uniqueStore('tx-in');
      const outside = uniqueStore('tx-out');
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const tx = storage
        .transaction(async () => {
          await storage.installations.upsert(inside, tokens('in'));
          await gate;
          throw new Error('rollback');
        })
        .catch(() => undefined);
      await new Promise((r) => setTimeout(r, 20));
      const write = storage.installations.upsert(outside, tokens('out'));
      await new Promise((r) => setTimeout(r, 20));
      release();
      await tx;
      await write;
      expect(await storage.installations.get(inside)).toBeNull();
      expect(await storage.installations.get(outside)).not.toBeNull();
    });
  });

  describe('work that outlives its transaction', () => {
    it('a write started inside a finished transaction does not land in a later one', async () => {
      const late = uniqueStore('tx-late');
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      let lateWrite!: Promise<unknown>;
      await storage.transaction(async () => {
        // Not awaited (a background refresh, a fire-and-forget in a handler).
        lateWrite = (async () => {
          await gate;
          return storage.installations.upsert(late, tokens('late'));
        })();
      });
      await storage
        .transaction(async (tx) => {
          await tx.insert(notes).values({ shop: late, body: 'rolled back' });
          release();
          await new Promise((r) => setTimeout(r, 30));
          throw new Error('rollback');
        })
        .catch(() => undefined);
      await lateWrite;
      expect(await storage.installations.get(late)).not.toBeNull();
    });

    it("leaves Node's async hooks off once no transaction runs (requests served from memory pay none)", async () => {
      // With async hooks on (an enabled AsyncLocalStorage), every promise gets an async id
      // of its own; with them off, a promise callback runs under id 0.
      const promiseAsyncId = () => Promise.resolve().then(() => executionAsyncId());
      const store = uniqueStore('tx-hooks');
      let inside = 0;
      await storage.transaction(async () => {
        await storage.installations.upsert(store, tokens('hooks'));
        inside = await promiseAsyncId();
      });
      await storage.installations.get(store);
      expect(inside).not.toBe(0);
      expect(await promiseAsyncId()).toBe(0);
    });
  });

  describe('session store', () => {
    const call = <T>(fn: (cb: (err?: unknown, v?: T) => void) => void) =>
      new Promise<T | undefined>((resolve, reject) =>
        fn((err, v) => (err ? reject(err) : resolve(v))),
      );

    it('get/set/touch/destroy with store_id, and expiry', async () => {
      const store = expressSessionStore(storage.sessions({ pruneIntervalMs: 0 }));
      const sid = `s_${generateKey()}`;
      const sess = {
        cookie: { originalMaxAge: 60_000, expires: new Date(Date.now() + 60_000) },
        storeId: 'st-1',
      };
      await call((cb) => store.set(sid, sess as never, cb));
      expect(await call((cb) => store.get(sid, cb))).toMatchObject({ storeId: 'st-1' });
      await call((cb) => store.touch!(sid, sess as never, cb));
      await call((cb) => store.destroy(sid, cb));
      expect(await call((cb) => store.get(sid, cb))).toBeNull();

      const old = `s_${generateKey()}`;
      await call((cb) =>
        store.set(
          old,
          { cookie: { originalMaxAge: 1, expires: new Date(Date.now() - 1000) } } as never,
          cb,
        ),
      );
      expect(await call((cb) => store.get(old, cb))).toBeNull();
      const pruned = await (store as unknown as { prune(): Promise<number> }).prune();
      expect(pruned).toBeGreaterThanOrEqual(1);
    });

    it('works as express-session store over HTTP', async () => {
      const app = express();
      app.use(
        session({
          store: expressSessionStore(storage.sessions({ pruneIntervalMs: 0 })),
          secret: 'test-secret-for-sessions',
          resave: false,
          saveUninitialized: false,
        }),
      );
      app.get('/login', (req, res) => {
        (req.session as unknown as { storeId: string }).storeId = 'st-http';
        res.send('ok');
      });
      app.get('/me', (req, res) => {
        res.json({ storeId: (req.session as unknown as { storeId?: string }).storeId ?? null });
      });
      const agent = request.agent(app);
      await agent.get('/login').expect(200);
      const me = await agent.get('/me').expect(200);
      expect(me.body).toEqual({ storeId: 'st-http' });
    });

    it('a storage failure reaches the callback as StorageError, not as "no session"', async () => {
      const broken = await ctx.open();
      const store = expressSessionStore(broken.sessions({ pruneIntervalMs: 0 }));
      await broken.close();
      const err = await call((cb) => store.get('any', cb)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreAppError);
      expect((err as StoreAppError).code).toBe('STORAGE_UNAVAILABLE');
    });
  });
}
