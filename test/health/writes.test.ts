/**
 * Health reflects whether the kit can write, and every storage error names
 * its real cause with the fix: a full disk (SQLite on a small tmpfs), a
 * read-only Postgres, a SQLite write lock held by another connection, a
 * Postgres that refuses connections, a database never migrated.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError } from '../../src/errors/index.js';
import { createHealthCheck, type HealthReport } from '../../src/health/index.js';
import { createStorage } from '../../src/storage/index.js';
import { MYSQL_ADMIN_URL } from '../helpers/mysql.js';
import { createTempDatabase, POSTGRES_ADMIN_URL } from '../helpers/postgres.js';
import { mountVolume } from '../helpers/volume.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function failure(p: Promise<unknown>): Promise<StorageError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StorageError);
  return err as StorageError;
}

const tokens = (n = 1) => ({
  scopes: ['read_products'],
  accessToken: `access-${n}`,
  refreshToken: `refresh-${n}`,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

const HEALTH_TOKEN = 'h'.repeat(32);
const detailed = { headers: { authorization: `Bearer ${HEALTH_TOKEN}` } };

describe('health reflects whether the kit can write', () => {
  it('a full disk: 503 with database read_only and reason disk_full, 200 again once space is freed', async () => {
    const vol = mountVolume(3);
    cleanups.push(() => vol.close());
    const dbFile = join(vol.dir, 'app.db');
    const h: Harness = await startHarness({
      databaseUrl: dbFile,
      // The detail (database status and reason) is for a caller bearing the health token.
      kit: { health: { path: '/healthz', cacheMs: 0, token: HEALTH_TOKEN } },
    });
    cleanups.push(() => h.close());
    const browser = new Browser();
    const cb = await browser.get(
      h.platform.approveInstall({ authorizeUrl: await begin(h, browser), storeId: h.storeId }),
    );
    expect(cb.status).toBe(302);
    expect((await fetch(`${h.appUrl}/healthz`, detailed)).status).toBe(200);

    vol.fill(dbFile);
    // The write probe runs at most once a second: the next report past that sees the full disk.
    await new Promise((r) => setTimeout(r, 1100));
    const res = await fetch(`${h.appUrl}/healthz`, detailed);
    const body = (await res.json()) as HealthReport;
    expect(res.status).toBe(503);
    expect(body.status).toBe('unavailable');
    expect(body.database).toMatchObject({
      status: 'read_only',
      error: 'STORAGE_UNAVAILABLE',
      reason: 'disk_full',
    });
    // Reads still work: the outbox is still reported.
    expect(body.purges).toEqual({ pending: 0, oldestAgeSeconds: null, failing: 0 });
    expect(JSON.stringify(body)).not.toContain(vol.dir);

    vol.free();
    await new Promise((r) => setTimeout(r, 1100));
    const healed = await fetch(`${h.appUrl}/healthz`, detailed);
    expect(healed.status).toBe(200);
    expect(((await healed.json()) as HealthReport).database).toMatchObject({
      status: 'up',
      reason: null,
    });
  }, 30_000);
});

describe('the write probe under a flood', () => {
  it('health flood with cacheMs 0: at most one probe row is written a second', async () => {
    let now = Date.parse('2026-11-25T06:00:00Z');
    let writes = 0;
    const check = createHealthCheck({
      pendingPurges: { list: async () => [] },
      lastRefreshFailure: () => null,
      writeProbe: async () => {
        writes++;
      },
      options: { dbTimeoutMs: 1000, cacheMs: 0 },
      now: () => now,
    });
    for (let i = 0; i < 10; i++) {
      await Promise.all(Array.from({ length: 20 }, () => check.report()));
      now += 99;
    }
    expect(writes).toBe(1);
    now += 200;
    await check.report();
    expect(writes).toBe(2);
  });
});

describe('storage errors name their real cause and the fix', () => {
  it('disk full (SQLite on a full tmpfs)', async () => {
    const vol = mountVolume(3);
    cleanups.push(() => vol.close());
    const dbFile = join(vol.dir, 'app.db');
    const storage = await createStorage({ databaseUrl: dbFile, encryptionKeys: [generateKey()] });
    cleanups.push(() => storage.close());
    await storage.installations.upsert('s1', tokens());
    vol.fill(dbFile);
    const err = await failure(storage.installations.upsert('s2', tokens(2)));
    expect(err.reason).toBe('disk_full');
    expect(err.code).toBe('STORAGE_UNAVAILABLE');
    expect(err.message).toMatch(/disk holding the database is full: free space/);
    expect(err.message).not.toMatch(/migrate/);
  }, 30_000);

  it('read-only (Postgres with default_transaction_read_only)', async () => {
    const db = await createTempDatabase('sak_ro');
    cleanups.push(() => db.drop());
    const storage = await createStorage({ databaseUrl: db.url, encryptionKeys: [generateKey()] });
    cleanups.push(() => storage.close());
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query(`ALTER DATABASE "${db.name}" SET default_transaction_read_only = on`);
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [db.name],
    );
    // The pool drops the terminated connections; later ones are read-only.
    let err: StorageError | undefined;
    for (let i = 0; i < 5 && err?.reason !== 'read_only'; i++) {
      err = await failure(storage.installations.upsert('s1', tokens()));
    }
    expect(err!.reason).toBe('read_only');
    expect(err!.message).toMatch(/\(25006\); the database is read-only/);
    expect(err!.message).toMatch(/primary, not a replica/);
  }, 30_000);

  it('locked (SQLite write lock held by another connection past busy_timeout)', async () => {
    const vol = mountVolume(8);
    cleanups.push(() => vol.close());
    const dbFile = join(vol.dir, 'app.db');
    const storage = await createStorage({
      databaseUrl: dbFile,
      encryptionKeys: [generateKey()],
      sqlite: { busyTimeoutMs: 50 },
    });
    cleanups.push(() => storage.close());
    const other = new Database(dbFile);
    other.exec('BEGIN IMMEDIATE');
    cleanups.push(() => {
      other.exec('ROLLBACK');
      other.close();
    });
    const err = await failure(storage.installations.upsert('s1', tokens()));
    expect(err.reason).toBe('locked');
    expect(err.message).toMatch(/\(SQLITE_BUSY\); the database is locked by another connection/);
  });

  it('unreachable (nothing listens at the Postgres address)', async () => {
    const storage = await createStorage({
      databaseUrl: 'postgres://postgres@127.0.0.1:1/none',
      encryptionKeys: [generateKey()],
      migrate: false,
    });
    cleanups.push(() => storage.close());
    const err = await failure(storage.installations.get('s1'));
    expect(err.reason).toBe('unreachable');
    expect(err.message).toMatch(
      /\(ECONNREFUSED: connect ECONNREFUSED 127\.0\.0\.1:1\); the database server cannot be reached: check that the server/,
    );
  });

  /** The admin URL with another database name, user or password. */
  const variant = (admin: string, change: { db?: string; user?: string; password?: string }) => {
    const url = new URL(admin);
    if (change.db) url.pathname = `/${change.db}`;
    if (change.user) url.username = change.user;
    if (change.password) url.password = change.password;
    return url.href;
  };
  const PASSWORD = 'not-the-password-7f3a';
  // Issue 32 item 7: a missing database and refused credentials are told apart from a server
  // that cannot be reached, with the driver's own words in the first line, never the password.
  it.each([
    {
      label: 'a Postgres database that does not exist (3D000)',
      url: () => variant(POSTGRES_ADMIN_URL, { db: 'sak_no_such_db' }),
      reason: 'database_missing',
      said: /^connecting to Postgres failed \(3D000: database "sak_no_such_db" does not exist\); the server answers, but the database named in DATABASE_URL does not exist on it: create it/,
    },
    {
      label: 'a Postgres user the server refuses (28000)',
      url: () => variant(POSTGRES_ADMIN_URL, { user: 'sak_no_such_role', password: PASSWORD }),
      reason: 'access_denied',
      said: /^connecting to Postgres failed \(28000: role "sak_no_such_role" does not exist\); the server refused the user or password in DATABASE_URL/,
    },
    {
      label: 'a MySQL/MariaDB database that does not exist (ER_BAD_DB_ERROR)',
      url: () => variant(MYSQL_ADMIN_URL, { db: 'sak_no_such_db' }),
      reason: 'database_missing',
      said: /^connecting to MySQL failed \(ER_BAD_DB_ERROR: Unknown database 'sak_no_such_db'\); the server answers, but the database named in DATABASE_URL does not exist/,
    },
    {
      label: 'a MySQL/MariaDB password the server refuses (ER_ACCESS_DENIED_ERROR)',
      url: () => variant(MYSQL_ADMIN_URL, { password: PASSWORD }),
      reason: 'access_denied',
      said: /^connecting to MySQL failed \(ER_ACCESS_DENIED_ERROR: Access denied for user '[^']+'@'[^']+' \(using password: YES\)\); the server refused the user or password in DATABASE_URL/,
    },
  ])('$label', async ({ url, reason, said }) => {
    const err = await failure(
      createStorage({ databaseUrl: url(), encryptionKeys: [generateKey()] }),
    );
    expect(err.reason).toBe(reason);
    expect(err.message).toMatch(said);
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toContain(PASSWORD);
  });

  it('schema (a database never migrated)', async () => {
    const vol = mountVolume(8);
    cleanups.push(() => vol.close());
    const storage = await createStorage({
      databaseUrl: join(vol.dir, 'empty.db'),
      encryptionKeys: [generateKey()],
      migrate: false,
    });
    cleanups.push(() => storage.close());
    const err = await failure(storage.installations.get('s1'));
    expect(err.reason).toBe('schema');
    expect(err.message).toMatch(/run `npx store-app migrate`/);
  });
});
