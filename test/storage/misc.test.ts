import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { expressSessionStore } from '../helpers/express-session-store.js';
import { createTempDatabase } from '../helpers/postgres.js';

const keys = [generateKey()];
const call = <T>(fn: (cb: (err?: unknown, v?: T) => void) => void) =>
  new Promise<T | undefined>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));

describe('storage odds and ends', () => {
  it(':memory: works and migrate() is idempotent', async () => {
    const storage = await createStorage({ databaseUrl: ':memory:', encryptionKeys: keys });
    try {
      await storage.migrate();
      await storage.installations.upsert('s', {
        scopes: ['a'],
        accessToken: 'at',
        refreshToken: null,
        accessTokenExpiresAt: new Date(Date.now() + 1000),
      });
      expect((await storage.installations.get('s'))?.accessToken).toBe('at');
    } finally {
      await storage.close();
    }
  });

  it('commits to a SQLite file survive a power cut: synchronous is FULL on every connection, also reopening a WAL file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-sync-'));
    try {
      const url = `file:${join(dir, 'app.db')}`;
      // The first open switches the file to WAL; the reopen finds it already in
      // WAL, where better-sqlite3's build would default to NORMAL.
      for (let i = 0; i < 2; i++) {
        const storage = await createStorage({ databaseUrl: url, encryptionKeys: keys });
        try {
          const client = (storage.db as { $client: { pragma(s: string, o: object): unknown } })
            .$client;
          expect(client.pragma('journal_mode', { simple: true })).toBe('wal');
          expect(client.pragma('synchronous', { simple: true })).toBe(2);
        } finally {
          await storage.close();
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('session expiry: the cookie expiry, else maxAge, else defaultTtlMs; expired reads as none', async () => {
    const storage = await createStorage({ databaseUrl: ':memory:', encryptionKeys: keys });
    try {
      const store = expressSessionStore(
        storage.sessions({ pruneIntervalMs: 0, defaultTtlMs: 60_000 }),
      );
      await call((cb) => store.set('a', { cookie: {} } as never, cb));
      await call((cb) => store.set('b', { cookie: { maxAge: 1 } } as never, cb));
      await call((cb) =>
        store.set('c', { cookie: { expires: new Date(Date.now() - 1) } } as never, cb),
      );
      expect(await call((cb) => store.get('a', cb))).toEqual({ cookie: {} });
      expect(await call((cb) => store.get('c', cb))).toBeNull();
      await new Promise((r) => setTimeout(r, 5));
      expect(await call((cb) => store.get('b', cb))).toBeNull();
      const pruned = await (store as unknown as { prune(): Promise<number> }).prune();
      expect(pruned).toBe(2);
    } finally {
      await storage.close();
    }
  });

  it('several instances starting together on a fresh Postgres migrate once, without errors', async () => {
    const database = await createTempDatabase('sak_migrate');
    try {
      const opened = await Promise.all(
        [1, 2, 3].map(() =>
          createStorage({ databaseUrl: database.url, encryptionKeys: keys, pool: { max: 2 } }),
        ),
      );
      await opened[0]!.installations.upsert('s', {
        scopes: [],
        accessToken: 'at',
        refreshToken: null,
        accessTokenExpiresAt: new Date(Date.now() + 1000),
      });
      expect((await opened[2]!.installations.get('s'))?.accessToken).toBe('at');
      const applied = await opened[1]!.db.execute(
        'select count(*) as n from __store_app_migrations',
      );
      // Each migration recorded once, however many instances raced.
      const journal = JSON.parse(
        readFileSync('migrations/postgres/meta/_journal.json', 'utf8'),
      ) as { entries: unknown[] };
      expect(Number(applied.rows[0].n)).toBe(journal.entries.length);
      await Promise.all(opened.map((s) => s.close()));
    } finally {
      await database.drop();
    }
  });

  it('the session prune timer runs on its interval, does not hold the process, and stops on close', async () => {
    const storage = await createStorage({ databaseUrl: ':memory:', encryptionKeys: keys });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      // The timer belongs to the session-store port (the express-session store wraps it).
      const store = storage.sessions({ pruneIntervalMs: 1000 });
      const prune = vi.spyOn(store, 'prune');
      vi.advanceTimersByTime(2500);
      expect(prune).toHaveBeenCalledTimes(2);
      // A failing prune with no 'error' listener must not crash the process.
      prune.mockRejectedValueOnce(new Error('database down'));
      vi.advanceTimersByTime(1000);
      await new Promise((r) => setImmediate(r));
      expect(prune).toHaveBeenCalledTimes(3);
      await storage.close();
      vi.advanceTimersByTime(5000);
      expect(prune).toHaveBeenCalledTimes(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a bad pool size at start', async () => {
    await expect(
      createStorage({ databaseUrl: ':memory:', encryptionKeys: keys, pool: { max: 0 } }),
    ).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
