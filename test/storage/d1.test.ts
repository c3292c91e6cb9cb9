/**
 * The D1 adapter (`store-app-kit/storage/d1`) on a real local D1: Miniflare
 * runs workerd's D1 (the SQLite and authoriser D1 runs, which refuses
 * BEGIN, SAVEPOINT and most PRAGMAs), whose binding the test drives from Node.
 * The public conformance suite runs on it, adapters standing in for separate
 * Worker instances; then what only D1 shows: migrations the way wrangler
 * applies them, the locks of deliveries and purges, and the app's queued
 * writes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/d1';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { staleD1Migrations } from '../../scripts/generate-d1-migrations.js';
import { ConfigError } from '../../src/errors/index.js';
import { D1_MIGRATIONS, type D1Transaction, d1Adapter } from '../../src/storage/d1/index.js';
import { openBuiltinAdapter } from '../../src/storage/index.js';
import { defineStorageAdapterSuite } from '../../src/testing/adapter-suite.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

/** One Miniflare for the file; each name is its own empty D1 database. */
let mf: Miniflare;
const NAMES = ['SUITE', 'MIGRATE', 'RACE', 'WRITES', 'VERIFY'] as const;
beforeAll(async () => {
  mf = new Miniflare({ modules: true, script: 'export default {}', d1Databases: [...NAMES] });
  const db = await mf.getD1Database('SUITE');
  await db.exec('CREATE TABLE app_probe (probe_key text NOT NULL)');
}, 60_000);
afterAll(async () => {
  await mf?.dispose();
});
const binding = (name: (typeof NAMES)[number]) => mf.getD1Database(name);

const probe = sqliteTable('app_probe', { probeKey: text('probe_key').notNull() });

defineStorageAdapterSuite<D1Transaction>({
  name: 'D1 (Miniflare)',
  open: async () => d1Adapter(await binding('SUITE'), { applyMigrations: true }),
  txProbe: {
    async write(tx, key) {
      tx.write(tx.db.insert(probe).values({ probeKey: key }));
    },
    async count(key) {
      const db = drizzle(await binding('SUITE'));
      const rows = await db.all<{ n: number }>(
        sql`SELECT count(*) AS n FROM app_probe WHERE probe_key = ${key}`,
      );
      return Number(rows[0]?.n);
    },
  },
});

describe('D1 migrations', () => {
  it('applies the bundled migrations once, recorded under wrangler’s names, and is safe to race', async () => {
    const db = await binding('MIGRATE');
    const adapters = [0, 1, 2].map(() => d1Adapter(db, { applyMigrations: true }));
    await Promise.all(adapters.map((a) => a.migrate()));
    await adapters[0]!.migrate();
    const names = (
      (await db.prepare('SELECT name FROM d1_migrations ORDER BY id').all()).results as Array<{
        name: string;
      }>
    ).map((r) => r.name);
    expect(names).toEqual(D1_MIGRATIONS.map((m) => m.name));
    expect(names[0]).toBe('0000_store_app_init.sql');
    const tables = (
      (
        await db
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'store_app_%'",
          )
          .all()
      ).results as Array<{ name: string }>
    ).map((r) => r.name);
    expect(tables.sort()).toEqual([
      'store_app_claims',
      'store_app_installations',
      'store_app_pending_purges',
      'store_app_purge_audit',
      'store_app_sessions',
      'store_app_webhook_deliveries',
    ]);
  });

  it('migrations/d1 and the bundled module are generated from drizzle-kit’s SQLite output, up to date', () => {
    // Fails when migrations/sqlite changed without `node scripts/generate-d1-migrations.js`.
    expect(staleD1Migrations()).toEqual([]);
  });

  it('leave D1 with the very schema better-sqlite3 gets from drizzle-kit’s SQLite migrations', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-d1-schema-'));
    try {
      const lite = await openBuiltinAdapter({ databaseUrl: `file:${join(dir, 'x.db')}` });
      await lite.migrate();
      const schema = `SELECT type, name, tbl_name, sql FROM sqlite_master
        WHERE name LIKE 'store_app_%' ORDER BY type, name`;
      const expected = lite.db.all(sql.raw(schema));
      await lite.close();
      const d1 = (await (await binding('MIGRATE')).prepare(schema).all()).results;
      expect(d1.length).toBeGreaterThan(10);
      expect(d1).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without applyMigrations, a database missing them fails at start naming the files and the fix', async () => {
    const db = await binding('VERIFY');
    const adapter = d1Adapter(db);
    const failure = await adapter.migrate().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toContain('0000_store_app_init.sql');
    expect((failure as Error).message).toContain('wrangler d1 migrations apply');
    // Applied as wrangler does (each file, then its name in d1_migrations): the check passes.
    await db.exec(
      'CREATE TABLE d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)',
    );
    for (const m of D1_MIGRATIONS) {
      await db.batch([
        ...m.statements.map((s) => db.prepare(s)),
        db.prepare('INSERT INTO d1_migrations (name) VALUES (?)').bind(m.name),
      ]);
    }
    await expect(adapter.migrate()).resolves.toBeUndefined();
  });

  it('refuses something that is not a D1 binding', () => {
    expect(() => d1Adapter(undefined as never)).toThrow(ConfigError);
  });
});

describe('D1 without interactive transactions', () => {
  const orders = sqliteTable('app_orders', {
    id: text('id').primaryKey(),
    storeId: text('store_id').notNull(),
    total: integer('total').notNull(),
  });
  const delivery = (webhookId: string) => ({
    webhookId,
    topic: 'orders/create',
    receivedAt: new Date(),
  });

  beforeAll(async () => {
    const db = await binding('WRITES');
    await d1Adapter(db, { applyMigrations: true }).migrate();
    await db.exec(
      'CREATE TABLE app_orders (id text PRIMARY KEY NOT NULL, store_id text NOT NULL, total integer NOT NULL)',
    );
  });

  async function countOrders(id: string) {
    const db = drizzle(await binding('WRITES'));
    const rows = await db.all<{ n: number }>(
      sql`SELECT count(*) AS n FROM app_orders WHERE id = ${id}`,
    );
    return Number(rows[0]?.n);
  }

  it('a handler’s queued writes commit with the delivery, and a failing statement rolls back the id too', async () => {
    const a = d1Adapter(await binding('WRITES'));
    const ok = await a.webhooks.runOnce(delivery('w-ok'), async ({ tx }) => {
      tx.write(tx.db.insert(orders).values({ id: 'o-1', storeId: 's', total: 5 }));
      // Reads see what is committed, not what is queued.
      return (await tx.db.select().from(orders)).length;
    });
    expect(ok).toEqual({ duplicate: false, result: 0 });
    expect(await countOrders('o-1')).toBe(1);
    // The second insert breaks the app's primary key: the batch, delivery id included, rolls back.
    const clash = await a.webhooks
      .runOnce(delivery('w-clash'), async ({ tx, addPendingPurge }) => {
        await addPendingPurge({ eventId: 'w-clash', storeId: 's', eventAt: new Date() });
        tx.write(
          tx.db.insert(orders).values({ id: 'o-2', storeId: 's', total: 1 }),
          tx.db.insert(orders).values({ id: 'o-1', storeId: 's', total: 1 }),
        );
      })
      .catch((err: unknown) => err);
    expect(String((clash as Error).message)).toMatch(/UNIQUE constraint failed: app_orders\.id/);
    expect(await countOrders('o-2')).toBe(0);
    expect(await a.purgeOutbox.get('w-clash')).toBeNull();
    // Not recorded, so the platform's retry runs it.
    const retried = await a.webhooks.runOnce(delivery('w-clash'), async ({ tx }) => {
      tx.write(tx.db.insert(orders).values({ id: 'o-2', storeId: 's', total: 1 }));
      return 'retried';
    });
    expect(retried).toEqual({ duplicate: false, result: 'retried' });
    expect(await countOrders('o-2')).toBe(1);
  });

  it('a write queued after the handler returned is refused, not silently lost', async () => {
    const a = d1Adapter(await binding('WRITES'));
    let late: D1Transaction | undefined;
    await a.webhooks.runOnce(delivery('w-late'), async ({ tx }) => {
      late = tx;
    });
    expect(() =>
      late!.write(late!.db.insert(orders).values({ id: 'o-late', storeId: 's', total: 1 })),
    ).toThrow(/after its delivery or purge ended/);
  });

  it('a duplicate delivery waits for the instance working on it, then reports the duplicate', async () => {
    const db = await binding('WRITES');
    const [a, b] = [d1Adapter(db), d1Adapter(db)];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let runs = 0;
    const first = a.webhooks.runOnce(delivery('w-slow'), async ({ tx }) => {
      runs++;
      await gate;
      tx.write(tx.db.insert(orders).values({ id: 'o-slow', storeId: 's', total: 1 }));
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = b.webhooks.runOnce(delivery('w-slow'), async () => {
      runs++;
    });
    await new Promise((r) => setTimeout(r, 100));
    release();
    expect(await first).toEqual({ duplicate: false, result: undefined });
    expect(await second).toEqual({ duplicate: true });
    expect(runs).toBe(1);
    expect(await countOrders('o-slow')).toBe(1);
  });

  it('a delivery held past the deadline elsewhere fails with a 503 StorageError (the platform retries)', async () => {
    const db = await binding('WRITES');
    const a = d1Adapter(db);
    const b = d1Adapter(db, { timeoutMs: 100 });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const first = a.webhooks.runOnce(delivery('w-held'), () => gate);
    await new Promise((r) => setTimeout(r, 50));
    const refused = await b.webhooks.runOnce(delivery('w-held'), async () => 1).catch((e) => e);
    release();
    await first;
    expect(refused).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503, reason: 'locked' });
  });

  it('onPurge’s queued deletes commit with the purge, and none when it throws', async () => {
    const a = d1Adapter(await binding('WRITES'));
    const now = new Date();
    const seed = async (storeId: string) => {
      await a.installations.save(
        storeId,
        {
          scopes: ['x'],
          accessTokenEnc: 'a.b.c.d.e',
          refreshTokenEnc: null,
          keyId: 'k',
          accessTokenExpiresAt: now,
        },
        { platformInstalledAt: null, now },
      );
      const db = drizzle(await binding('WRITES'));
      await db.insert(orders).values({ id: `${storeId}-order`, storeId, total: 1 });
    };
    const deleteOrders = (storeId: string) => async (tx: D1Transaction) => {
      const { eq } = await import('drizzle-orm');
      tx.write(tx.db.delete(orders).where(eq(orders.storeId, storeId)));
      return undefined;
    };
    await seed('store-p1');
    const failure = new Error('external system down');
    await expect(
      a.purge('store-p1', {
        now,
        effects: async (tx) => {
          await deleteOrders('store-p1')(tx);
          throw failure;
        },
      }),
    ).rejects.toBe(failure);
    expect(await countOrders('store-p1-order')).toBe(1);
    expect(await a.installations.get('store-p1')).not.toBeNull();
    const done = await a.purge('store-p1', { now, effects: deleteOrders('store-p1') });
    expect(done).toMatchObject({ purged: true, counts: { store_app_installations: 1 } });
    expect(await countOrders('store-p1-order')).toBe(0);
    expect(await a.installations.get('store-p1')).toBeNull();
  });

  it('the D1 database never receives a BEGIN: everything runs as statements and batches', async () => {
    // workerd refuses BEGIN on D1 outright; this is what the adapter avoids.
    const db = await binding('WRITES');
    await expect(db.exec('BEGIN')).rejects.toThrow(/transaction/i);
  });
});

describe('inside workerd', () => {
  it('a Worker bundles the entry without Node built-ins and runs it on env.DB', async () => {
    // platform "neutral": a `node:` import anywhere in the entry's graph fails the bundle.
    const bundled = await build({
      stdin: {
        contents: `
          import { d1Adapter } from './src/storage/d1/index.ts';
          export default {
            async fetch(request, env) {
              const adapter = d1Adapter(env.DB, { applyMigrations: true });
              await adapter.migrate();
              const now = new Date();
              const later = new Date(now.getTime() + 60_000);
              const claims = [
                await adapter.claimOnce('state', 'abc', later, now),
                await adapter.claimOnce('state', 'abc', later, now),
              ];
              const first = await adapter.webhooks.runOnce(
                { webhookId: 'w1', topic: 't', receivedAt: now }, async () => 'ran');
              const second = await adapter.webhooks.runOnce(
                { webhookId: 'w1', topic: 't', receivedAt: now }, async () => 'ran again');
              return Response.json({ claims, first, second });
            },
          };`,
        resolveDir: root,
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      write: false,
      logLevel: 'silent',
    });
    const worker = new Miniflare({
      modules: true,
      script: bundled.outputFiles[0]!.text,
      d1Databases: ['DB'],
      // No nodejs_compat: the Worker has no Node modules at all.
      compatibilityDate: '2025-01-01',
    });
    try {
      const res = await worker.dispatchFetch('http://worker.test/');
      expect(await res.json()).toEqual({
        claims: [true, false],
        first: { duplicate: false, result: 'ran' },
        second: { duplicate: true },
      });
    } finally {
      await worker.dispose();
    }
  }, 60_000);
});
