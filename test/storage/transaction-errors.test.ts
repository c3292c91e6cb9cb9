/**
 * `storage.transaction()` turns "the database became unavailable" inside the
 * app's own statements into StorageError (a 503 for the app), and leaves the
 * app's errors and constraint violations alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError, StoreAppError } from '../../src/errors/index.js';
import { createStorage } from '../../src/storage/index.js';
import type { Storage } from '../../src/storage/types.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';

const keys = [generateKey()];
const tokens = () => ({
  scopes: ['read_products'],
  accessToken: `at_${generateKey()}`,
  refreshToken: null,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

async function settle(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('transaction() on Postgres', () => {
  let database: TempDatabase;
  let storage: Storage;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await createTempDatabase('sak_txerr');
    storage = await createStorage({ databaseUrl: database.url, encryptionKeys: keys });
    await storage.db.execute(sql`CREATE TABLE app_items (id text PRIMARY KEY, secret text)`);
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await storage?.close();
    await database?.drop();
  });

  it('a backend terminated mid-transaction (57P01) becomes StorageError, cause kept, no parameters', async () => {
    const err = await settle(
      storage.transaction(async (tx) => {
        const { rows } = await tx.execute(sql`SELECT pg_backend_pid() AS pid`);
        const pid = Number(rows[0].pid);
        // Only this temp database's backend, from another client.
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND datname = $2',
          [pid, database.name],
        );
        await tx.execute(
          sql`INSERT INTO app_items (id, secret) VALUES (${'a'}, ${'hunter2-param'})`,
        );
      }),
    );
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).code).toBe('STORAGE_UNAVAILABLE');
    expect((err as StorageError).status).toBe(503);
    expect((err as Error).cause).toBeDefined();
    expect((err as Error).message).not.toContain('hunter2-param');
    // The pool dropped the dead connection: the next transaction works.
    await storage.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO app_items (id) VALUES (${'after'})`);
    });
  });

  it("the app's own errors and unique violations pass through unchanged", async () => {
    const mine = new Error('app says no');
    expect(await settle(storage.transaction(async () => Promise.reject(mine)))).toBe(mine);
    await storage.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO app_items (id) VALUES (${'dup'})`);
    });
    const dup = await settle(
      storage.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO app_items (id) VALUES (${'dup'})`);
      }),
    );
    expect(dup).not.toBeInstanceOf(StoreAppError);
    expect(((dup as Error).cause as { code?: string }).code).toBe('23505');
  });
});

describe('transaction() on SQLite', () => {
  let dir: string;
  let file: string;
  let storage: Storage;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sak-txerr-'));
    file = join(dir, 'app.db');
    storage = await createStorage({
      databaseUrl: `file:${file}`,
      encryptionKeys: keys,
      sqlite: { busyTimeoutMs: 50 },
    });
    storage.db.run(sql`CREATE TABLE app_items (id text PRIMARY KEY)`);
  });
  afterAll(async () => {
    await storage?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the write lock held by another process past busy_timeout → StorageError; nothing written', async () => {
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    let ran = false;
    try {
      const err = await settle(
        storage.transaction(async (tx) => {
          ran = true;
          tx.run(sql`INSERT INTO app_items (id) VALUES (${'x'})`);
        }),
      );
      expect(err).toBeInstanceOf(StorageError);
      expect((err as StorageError).code).toBe('STORAGE_UNAVAILABLE');
      expect(((err as Error).cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
      expect(ran).toBe(false);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    // The lock is free again: writes work.
    await storage.installations.upsert('after-lock', tokens());
  });

  it('a busy error from a statement inside fn (another handle) → StorageError, rolled back', async () => {
    // The app writes through its own second connection inside the kit's
    // transaction while a third holds that file's lock: a real SQLITE_BUSY.
    const otherFile = join(dir, 'other.db');
    const holder = new Database(otherFile);
    holder.exec('CREATE TABLE IF NOT EXISTS t (id text)');
    holder.exec('BEGIN IMMEDIATE');
    const appHandle = new Database(otherFile, { timeout: 10 });
    try {
      const err = await settle(
        storage.transaction(async (tx) => {
          tx.run(sql`INSERT INTO app_items (id) VALUES (${'rolled-back'})`);
          appHandle.prepare('INSERT INTO t (id) VALUES (?)').run('secret-param');
        }),
      );
      expect(err).toBeInstanceOf(StorageError);
      expect(((err as Error).cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
      expect((err as Error).message).not.toContain('secret-param');
      expect(storage.db.all(sql`SELECT id FROM app_items WHERE id = 'rolled-back'`)).toEqual([]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
      appHandle.close();
    }
  });

  it("the app's own errors and unique violations pass through unchanged", async () => {
    const mine = new Error('app says no');
    expect(await settle(storage.transaction(async () => Promise.reject(mine)))).toBe(mine);
    storage.db.run(sql`INSERT INTO app_items (id) VALUES (${'dup'})`);
    const dup = await settle(
      storage.transaction(async (tx) => {
        tx.run(sql`INSERT INTO app_items (id) VALUES (${'dup'})`);
      }),
    );
    expect(dup).not.toBeInstanceOf(StoreAppError);
    const code =
      ((dup as Error).cause as { code?: string } | undefined)?.code ??
      (dup as { code?: string }).code;
    expect(code).toMatch(/^SQLITE_CONSTRAINT/);
  });
});
