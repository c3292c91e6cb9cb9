/**
 * Issue 24: a sweep that keeps up on SQLite. Every COMMIT there is an fsync,
 * and a refresh writes twice (take the lease, store the tokens), so refreshes
 * running together share their COMMITs. Each write still settles only once it
 * is durable. Real SQLite file; a second connection reads what is committed.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage, type Storage } from '../../src/storage/index.js';

let dir: string;
let file: string;
let storage: Storage;
let reader: Database.Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sak-refresh-grouped-'));
  file = join(dir, 'app.db');
  storage = await createStorage({ databaseUrl: `file:${file}`, encryptionKeys: [generateKey()] });
  await storage.migrate();
  reader = new Database(file, { readonly: true });
});

afterEach(async () => {
  reader.close();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const walBytes = () => statSync(`${file}-wal`).size;
const tokens = (i: number) => ({
  accessToken: `at-${i}`,
  refreshToken: `rt-${i}`,
  scopes: ['read_products'],
  accessTokenExpiresAt: new Date(Date.now() + 86_400_000),
});

async function installed(prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  for (const [i, id] of ids.entries()) await storage.installations.upsert(id, tokens(i));
  return ids;
}

const committedVersion = (storeId: string) =>
  (
    reader
      .prepare('SELECT version FROM store_app_installations WHERE store_id = ?')
      .get(storeId) as { version: number }
  ).version;

describe('refresh lease writes on SQLite', () => {
  it('refreshes running together share COMMITs: the WAL grows by a few pages, not two commits each', async () => {
    const one = async (id: string, i: number) => {
      const inst = await storage.installations.get(id);
      expect(
        await storage.installations.acquireRefreshLease(id, inst?.version ?? 0, `o-${id}`, 30_000),
      ).toBe(true);
      expect(
        await storage.installations.completeRefresh(id, `o-${id}`, tokens(100 + i)),
      ).not.toBeNull();
    };
    const aloneIds = await installed('alone', 20);
    let before = walBytes();
    for (const [i, id] of aloneIds.entries()) await one(id, i);
    const alone = walBytes() - before;

    const togetherIds = await installed('together', 20);
    before = walBytes();
    await Promise.all(togetherIds.map(one));
    const together = walBytes() - before;

    // Two commits per refresh, each at least one page frame (4 KiB + header).
    expect(alone).toBeGreaterThanOrEqual(2 * 20 * 4096);
    expect(together).toBeLessThan(alone / 4);
    for (const id of togetherIds) expect(committedVersion(id)).toBe(2);
  });

  it('no lease or token write settles before the COMMIT that makes it durable', async () => {
    const ids = await installed('durable', 10);
    const seen: boolean[] = [];
    await Promise.all(
      ids.map(async (id, i) => {
        await storage.installations.acquireRefreshLease(id, 1, `o-${id}`, 30_000);
        const owner = reader
          .prepare(
            'SELECT refresh_lease_owner AS o FROM store_app_installations WHERE store_id = ?',
          )
          .get(id) as { o: string | null };
        seen.push(owner.o === `o-${id}`);
        await storage.installations.completeRefresh(id, `o-${id}`, tokens(200 + i));
        seen.push(committedVersion(id) === 2);
      }),
    );
    expect(seen).toHaveLength(20);
    expect(seen.every(Boolean)).toBe(true);
  });

  it('of three owners racing for one lease in the same group, exactly one wins', async () => {
    const [id] = await installed('race', 1);
    const wins = await Promise.all(
      ['a', 'b', 'c'].map((o) =>
        storage.installations.acquireRefreshLease(id as string, 1, o, 30_000),
      ),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
  });
});
