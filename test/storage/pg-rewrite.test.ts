/**
 * The Postgres rewrite after purges (src/storage/pg-rewrite.ts): a burst is
 * rewritten together once the interval has passed, and a rewrite never makes
 * readers queue behind it for long when another transaction holds the table.
 */
import { randomUUID } from 'node:crypto';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { countFound, postgresTableFiles } from '../helpers/data-files.js';
import { createTempDatabase } from '../helpers/postgres.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const notes = pgTable('app_notes', {
  id: serial('id').primaryKey(),
  storeId: text('store_id').notNull(),
  body: text('body').notNull(),
});

const tokens = (id: string) => ({
  scopes: ['read_products'],
  accessToken: `access-${id}`,
  refreshToken: `refresh-${id}`,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

async function setUp(minIntervalMs: number, warnings: unknown[] = []) {
  const db = await createTempDatabase('sak_pg_rewrite');
  cleanups.push(() => db.drop());
  const logger = {
    warn: (o: unknown) => warnings.push(o),
    info() {},
    debug() {},
    error() {},
    child() {
      return logger;
    },
  };
  const storage = await createStorage({
    databaseUrl: db.url,
    encryptionKeys: [generateKey()],
    purgeRewrite: { minIntervalMs },
    // biome-ignore lint/suspicious/noExplicitAny: a recording stand-in for pino.
    logger: logger as any,
  });
  cleanups.push(() => storage.close());
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  cleanups.push(() => client.end());
  await client.query(
    'CREATE TABLE app_notes (id serial PRIMARY KEY, store_id text NOT NULL, body text NOT NULL)',
  );
  // Autovacuum's ANALYZE holds a snapshot, which puts a rewrite off: not during these tests.
  for (const t of ['app_notes', 'store_app_installations', 'store_app_sessions']) {
    await client.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
  }
  const ids = Array.from({ length: 6 }, () => `st-${randomUUID()}`);
  for (const id of ids) {
    await storage.installations.upsert(id, tokens(id));
    await client.query(
      `INSERT INTO app_notes (store_id, body) SELECT $1, 'note ' || g FROM generate_series(1, 50) g`,
      [id],
    );
  }
  const relfilenode = async () =>
    Number(
      (await client.query("SELECT relfilenode FROM pg_class WHERE oid = 'app_notes'::regclass"))
        .rows[0].relfilenode,
    );
  const found = async (needles: string[]) =>
    countFound(await postgresTableFiles(client, ['store_app_installations', 'app_notes']), needles);
  /**
   * Waits for the table's next rewrite (a new file). A rewrite is put off while
   * a transaction older than the purge is open anywhere on the server, which
   * the tests of other files sharing it may hold for a few seconds.
   */
  const rewrittenFrom = async (node: number) => {
    const end = Date.now() + 20_000;
    while ((await relfilenode()) === node && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
    }
    return relfilenode();
  };
  return { storage, client, url: db.url, ids, relfilenode, found, rewrittenFrom };
}

describe('the Postgres rewrite after purges', () => {
  it('a burst: the first purge rewrites at once, the rest together once the interval has passed', async () => {
    const { storage, ids, relfilenode, found, rewrittenFrom } = await setUp(5000);
    const [first, ...burst] = ids.slice(0, 4) as [string, ...string[]];
    const before = await relfilenode();
    expect(await storage.purge(first, { tables: [notes] })).toMatchObject({ purged: true });
    const afterFirst = await rewrittenFrom(before);
    expect(afterFirst).not.toBe(before);
    expect(await found([first])).toBe(0);

    // Within the interval: VACUUMed (freed), owed to the next rewrite, still in the files.
    for (const id of burst) {
      expect(await storage.purge(id, { tables: [notes] })).toMatchObject({
        purged: true,
        scrubbed: false,
      });
    }
    expect(await relfilenode()).toBe(afterFirst);
    expect(await found(burst)).toBe(burst.length);

    // One rewrite for the three, after the interval.
    const afterBurst = await rewrittenFrom(afterFirst);
    expect(afterBurst).not.toBe(afterFirst);
    expect(await found(burst)).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(await relfilenode()).toBe(afterBurst);
    // The stores not purged are untouched.
    expect(await found(ids.slice(4))).toBe(2);
  }, 60_000);

  it('a table held by a long transaction: readers wait at most the rewrite’s short lock wait, and the rewrite follows later', async () => {
    const warnings: Array<{ event?: string }> = [];
    const { storage, client, url, ids, relfilenode, found, rewrittenFrom } = await setUp(
      1000,
      warnings,
    );
    const before = await relfilenode();
    // A long report holds the table (ACCESS SHARE) until the reader below was timed.
    const held = new pg.Client({ connectionString: url });
    await held.connect();
    cleanups.push(() => held.end());
    await held.query('BEGIN');
    await held.query('SELECT count(*) FROM app_notes');

    const gone = ids[0] as string;
    const purging = storage.purge(gone, { tables: [notes] });
    // Once the rewrite waits for the table's lock, another request reads the table.
    const waiting = async () =>
      (
        await client.query(
          "SELECT 1 FROM pg_locks WHERE relation = 'app_notes'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted",
        )
      ).rowCount === 1;
    // (A turn put off by an older transaction elsewhere on the server comes back 1 s later.)
    const end = Date.now() + 20_000;
    while (!(await waiting()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    const t0 = performance.now();
    await client.query('SELECT count(*) FROM app_notes');
    // Behind a rewrite waiting as long as the pool's 2 s lock_timeout, it would wait ~2 s too.
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await purging).toMatchObject({ purged: true, scrubbed: false });
    expect(warnings.some((w) => w.event === 'purge.rewrite_deferred')).toBe(true);
    expect(await relfilenode()).toBe(before);
    await held.query('COMMIT');

    // Once the transaction ended, the next turn rewrites the table.
    expect(await rewrittenFrom(before)).not.toBe(before);
    expect(await found([gone])).toBe(0);
  }, 60_000);

  it('a transaction begun before the purge is still open: the rewrite waits for it (it would copy the rows that snapshot sees)', async () => {
    const warnings: Array<{ event?: string; reason?: string }> = [];
    const { storage, url, ids, relfilenode, found, rewrittenFrom } = await setUp(1000, warnings);
    const before = await relfilenode();
    // A long report in REPEATABLE READ, on another table: no lock in the way, only its snapshot.
    const report = new pg.Client({ connectionString: url });
    await report.connect();
    cleanups.push(() => report.end());
    await report.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await report.query('SELECT count(*) FROM store_app_claims');

    const gone = ids[0] as string;
    expect(await storage.purge(gone, { tables: [notes] })).toMatchObject({
      purged: true,
      scrubbed: false,
    });
    expect(
      warnings.some((w) => w.event === 'purge.rewrite_deferred' && w.reason === 'open_transaction'),
    ).toBe(true);
    expect(await relfilenode()).toBe(before);
    await new Promise((r) => setTimeout(r, 1500));
    // Still put off: the report is still open.
    expect(await relfilenode()).toBe(before);

    await report.query('COMMIT');
    expect(await rewrittenFrom(before)).not.toBe(before);
    expect(await found([gone])).toBe(0);
  }, 60_000);
});
