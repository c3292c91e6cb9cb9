/**
 * Issue 11 §4: a purge leaves no readable bytes of the merchant's rows.
 * SQLite: secure_delete zeroes deleted cells and free pages, and a WAL
 * checkpoint (TRUNCATE) after the purge commit empties the WAL; the raw
 * database file and WAL are scanned for a marker written into app rows.
 * Postgres: dead tuples keep deleted rows until VACUUM; the purge VACUUMs the
 * tables it touched, after its commit (pgstattuple counts no dead tuple).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { pgTable, text as pgText, serial } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage, type Storage } from '../../src/storage/index.js';
import { countFound, postgresTableFiles } from '../helpers/data-files.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';

const ROWS = 2000;

const tokens = (tag: string) => ({
  scopes: ['read_products'],
  accessToken: `access-${tag}`,
  refreshToken: `refresh-${tag}`,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

function occurrences(haystack: Buffer, needle: string): number {
  const n = Buffer.from(needle);
  let count = 0;
  for (let i = haystack.indexOf(n); i >= 0; i = haystack.indexOf(n, i + 1)) count++;
  return count;
}

describe('no readable bytes after a purge (SQLite file and WAL)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-purge-bytes-'));
  const file = join(dir, 'app.db');
  let storage: Storage | undefined;
  afterAll(async () => {
    await storage?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const notes = sqliteTable('app_notes', {
    id: integer('id').primaryKey({ autoIncrement: true }),
    storeId: text('store_id').notNull(),
    body: text('body').notNull(),
  });

  const scan = (marker: string) =>
    occurrences(readFileSync(file), marker) +
    (existsSync(`${file}-wal`) ? occurrences(readFileSync(`${file}-wal`), marker) : 0);

  it('the purged store’s marker is in neither the SQLite file nor its WAL after the purge', async () => {
    storage = await createStorage({ databaseUrl: file, encryptionKeys: [generateKey()] });
    const s = storage;
    await s.db.run(
      sql`CREATE TABLE app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
    );
    const gone = randomUUID();
    const kept = randomUUID();
    const marker = `MERCHANT-SECRET-${randomBytes(6).toString('hex')}`;
    const keptMarker = `KEPT-${randomBytes(6).toString('hex')}`;
    await s.installations.upsert(gone, tokens('gone'));
    await s.installations.upsert(kept, tokens('kept'));
    const insert = (storeId: string, body: string, from: number, to: number) =>
      s.transaction(async (tx) => {
        for (let i = from; i < to; i += 500) {
          await tx.insert(notes).values(
            Array.from({ length: Math.min(500, to - i) }, (_, j) => ({
              storeId,
              body: `${body} #${i + j} ${'x'.repeat(64)}`,
            })),
          );
        }
      });
    // Half the rows checkpointed into the main file, half still only in the WAL.
    await insert(gone, marker, 0, ROWS / 2);
    await insert(kept, keptMarker, 0, 100);
    await s.db.run(sql`PRAGMA wal_checkpoint(TRUNCATE)`);
    await insert(gone, marker, ROWS / 2, ROWS);
    expect(scan(marker)).toBeGreaterThanOrEqual(ROWS);

    const result = await s.purge(gone, { tables: [notes] });
    expect(result).toMatchObject({ purged: true, scrubbed: true });
    expect(result.counts['app_notes']).toBe(ROWS);
    expect(scan(marker)).toBe(0);
    // The other store's rows are untouched.
    expect(scan(keptMarker)).toBeGreaterThanOrEqual(100);
  });
});

describe('no dead tuples left after a purge (Postgres)', () => {
  let db: TempDatabase | undefined;
  let storage: Storage | undefined;
  afterAll(async () => {
    await storage?.close();
    await db?.drop();
  });

  const notes = pgTable('app_notes', {
    id: serial('id').primaryKey(),
    storeId: pgText('store_id').notNull(),
    body: pgText('body').notNull(),
  });

  it('the purge VACUUMs the tables it touched: pgstattuple counts no dead tuple of the store', async () => {
    db = await createTempDatabase('sak_purge_bytes');
    storage = await createStorage({ databaseUrl: db.url, encryptionKeys: [generateKey()] });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pgstattuple');
      await client.query(
        'CREATE TABLE app_notes (id serial PRIMARY KEY, store_id text NOT NULL, body text NOT NULL)',
      );
      // Autovacuum must not do the work for us during the test.
      await client.query('ALTER TABLE app_notes SET (autovacuum_enabled = false)');
      const gone = randomUUID();
      await storage.installations.upsert(gone, tokens('gone'));
      await client.query(
        `INSERT INTO app_notes (store_id, body) SELECT $1, 'MERCHANT-SECRET ' || g FROM generate_series(1, ${ROWS}) g`,
        [gone],
      );
      const dead = async (table: string) =>
        Number(
          (await client.query(`SELECT dead_tuple_count FROM pgstattuple('${table}')`)).rows[0]
            .dead_tuple_count,
        );
      expect(await dead('app_notes')).toBe(0);

      const result = await storage.purge(gone, { tables: [notes] });
      expect(result).toMatchObject({ purged: true, scrubbed: true });
      expect(result.counts['app_notes']).toBe(ROWS);
      expect(await dead('app_notes')).toBe(0);
      expect(await dead('store_app_installations')).toBe(0);
    } finally {
      await client.end();
    }
  });
});

describe('no purged bytes in the Postgres files after a purge and a CHECKPOINT', () => {
  let db: TempDatabase | undefined;
  let storage: Storage | undefined;
  afterAll(async () => {
    await storage?.close();
    await db?.drop();
  });

  const notes = pgTable('app_notes', {
    id: serial('id').primaryKey(),
    storeId: pgText('store_id').notNull(),
    body: pgText('body').notNull(),
  });

  it('the purge rewrites the tables it touched: its store id is in no heap, TOAST or index file', async () => {
    db = await createTempDatabase('sak_purge_heap');
    storage = await createStorage({
      databaseUrl: db.url,
      encryptionKeys: [generateKey()],
      // The first purge rewrites at once, unless a transaction older than it is
      // open anywhere on the shared server: then the next turn, 200 ms on.
      purgeRewrite: { minIntervalMs: 200 },
    });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(
        'CREATE TABLE app_notes (id serial PRIMARY KEY, store_id text NOT NULL, body text NOT NULL)',
      );
      await client.query('CREATE INDEX app_notes_store_id_idx ON app_notes (store_id)');
      const tables = ['store_app_installations', 'app_notes'];
      for (const t of tables)
        await client.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
      // Rows of both stores interleaved: they share pages, so no page empties whole.
      const gone = `gone-${randomUUID()}`;
      const kept = `kept-${randomUUID()}`;
      for (const id of [gone, kept]) await storage.installations.upsert(id, tokens(id));
      await client.query(
        `INSERT INTO app_notes (store_id, body) SELECT CASE WHEN g % 2 = 0 THEN $1 ELSE $2 END, 'note ' || g FROM generate_series(1, ${ROWS}) g`,
        [gone, kept],
      );
      expect(countFound(await postgresTableFiles(client, tables), [gone])).toBe(1);

      const result = await storage.purge(gone, { tables: [notes] });
      expect(result).toMatchObject({ purged: true });
      const end = Date.now() + 20_000;
      while (countFound(await postgresTableFiles(client, tables), [gone]) > 0 && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const files = await postgresTableFiles(client, tables);
      expect(countFound(files, [gone])).toBe(0);
      expect(countFound(files, [kept])).toBe(1);
    } finally {
      await client.end();
    }
  });
});
