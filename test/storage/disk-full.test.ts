/**
 * Issue 33 §5: SQLite recovers from a full disk without a restart. On a 2 MB
 * volume the WAL never reaches SQLite's auto-checkpoint (1,000 pages, ~4 MB):
 * it grows until the volume is full, and once space is freed it grows back
 * into it, so writes kept failing with SQLITE_FULL until the process
 * restarted (closing the last connection empties the WAL). A real tmpfs, one
 * kit storage on it, 150 stores written in rounds: fill, free, write again.
 */
import { statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError } from '../../src/errors/index.js';
import { createStorage, type Storage } from '../../src/storage/index.js';
import { mountVolume } from '../helpers/volume.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const STORES = 150;
const storeIds = Array.from({ length: STORES }, (_, i) => `store-${i}`);

const tokens = (tag: string) => ({
  scopes: ['read_products'],
  accessToken: `access-${tag}-${'a'.repeat(200)}`,
  refreshToken: `refresh-${tag}-${'r'.repeat(200)}`,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

const notes = sqliteTable('app_notes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  storeId: text('store_id').notNull(),
  body: text('body').notNull(),
});

/**
 * One round: every store's tokens rotated (the kit's write, outside a
 * transaction) and its note rewritten (the app's transaction). Returns the
 * failures by store.
 */
async function round(storage: Storage, n: number): Promise<Map<string, StorageError>> {
  const failed = new Map<string, StorageError>();
  for (const id of storeIds) {
    try {
      await storage.installations.upsert(id, tokens(`${id}-${n}`));
      await storage.transaction(async (tx) => {
        await tx.delete(notes).where(sql`${notes.storeId} = ${id}`);
        await tx.insert(notes).values({ storeId: id, body: `note ${n} ${'n'.repeat(300)}` });
      });
    } catch (err) {
      if (!(err instanceof StorageError)) throw err;
      failed.set(id, err);
    }
  }
  return failed;
}

describe('SQLite after a full disk (2 MB tmpfs)', () => {
  it('once space is freed every store writes again without a restart, and the WAL stays bounded', async () => {
    const vol = mountVolume(2);
    cleanups.push(() => vol.close());
    const file = join(vol.dir, 'app.db');
    const storage = await createStorage({ databaseUrl: file, encryptionKeys: [generateKey()] });
    cleanups.push(() => storage.close());
    await storage.db.run(
      sql`CREATE TABLE app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
    );
    // 150 stores already outgrow a WAL that is never checkpointed on this volume:
    // whatever fails here fails for want of space, and says so.
    for (const err of (await round(storage, 0)).values()) expect(err.reason).toBe('disk_full');

    // The volume fills while the app writes (no checkpoint by hand: the WAL is as the app left it).
    vol.fill();
    let full: StorageError | undefined;
    for (let n = 1; n <= 10 && !full; n++) full = [...(await round(storage, n)).values()][0];
    expect(full?.reason).toBe('disk_full');
    expect(full?.message).toMatch(/disk holding the database is full: free space on that volume/);
    expect(full?.message).toMatch(/writes resume without a restart/);

    vol.free();
    // The error said writes resume without a restart: every store, round after round.
    const failures: string[] = [];
    for (let n = 11; n <= 20; n++) {
      for (const [id, err] of await round(storage, n)) failures.push(`${n}:${id}:${err.reason}`);
    }
    expect(failures).toEqual([]);
    // Reads answer too, with the last round's values.
    const rows = await storage.db.select().from(notes);
    expect(rows).toHaveLength(STORES);
    expect(rows.every((r: { body: string }) => r.body.startsWith('note 20 '))).toBe(true);
    const installed = await storage.installations.get('store-7');
    expect(installed?.accessToken).toContain('store-7-20');
    // The WAL no longer outgrows the room the volume has.
    expect(statSync(`${file}-wal`).size).toBeLessThan(1024 * 1024);
  }, 120_000);

  it('a volume freed by only 512 KB: the WAL is emptied and checkpointed more often, every store writes again', async () => {
    // Room for the default 1,000-page WAL when the kit opens; the disk then fills from elsewhere.
    const vol = mountVolume(20);
    cleanups.push(() => vol.close());
    const file = join(vol.dir, 'app.db');
    const storage = await createStorage({ databaseUrl: file, encryptionKeys: [generateKey()] });
    cleanups.push(() => storage.close());
    await storage.db.run(
      sql`CREATE TABLE app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
    );
    expect((await round(storage, 0)).size).toBe(0);
    vol.fill();
    let full: StorageError | undefined;
    for (let n = 1; n <= 40 && !full; n++) full = [...(await round(storage, n)).values()][0];
    expect(full?.reason).toBe('disk_full');

    // The operator frees a little: the WAL must not eat it and fail again.
    const filler = join(vol.dir, 'filler');
    truncateSync(filler, statSync(filler).size - 512 * 1024);
    const failures: string[] = [];
    for (let n = 41; n <= 50; n++) {
      for (const [id, err] of await round(storage, n)) failures.push(`${n}:${id}:${err.reason}`);
    }
    expect(failures).toEqual([]);
    expect((await storage.installations.get('store-149'))?.accessToken).toContain('store-149-50');
  }, 120_000);
});
