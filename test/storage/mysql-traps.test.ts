/**
 * What MySQL / MariaDB get wrong by default, each checked against the real
 * server: affected rows counted as "found" (claim-once replayable), deadlocks
 * and lock-wait timeouts, key length and letter case of indexed text,
 * DATETIME dropping milliseconds, the migration lock, and what a purge leaves
 * in InnoDB's files.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { int, mysqlTable, text, varchar } from 'drizzle-orm/mysql-core';
import mysql from 'mysql2/promise';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError } from '../../src/errors/index.js';
import { createStorage, MIGRATIONS_TABLE, type Storage } from '../../src/storage/index.js';
import { MYSQL_LOCK_ATTEMPTS } from '../../src/storage/mysql.js';
import { createTempMysqlDatabase, mysqlAdmin } from '../helpers/mysql.js';
import type { TempDatabase } from '../helpers/postgres.js';

const keys = [generateKey()];
let database: TempDatabase;
let storage: Storage;
/** A plain mysql2 connection on the test database, for the other side of each race. */
let raw: mysql.Connection;

const open = (extra: Partial<Parameters<typeof createStorage>[0]> = {}) =>
  createStorage({ databaseUrl: database.url, encryptionKeys: keys, pool: { max: 4 }, ...extra });

const tokens = (tag: string, expiresAt = new Date(Date.now() + 3_600_000)) => ({
  scopes: ['read_products'],
  accessToken: `at-${tag}`,
  refreshToken: `rt-${tag}`,
  accessTokenExpiresAt: expiresAt,
});

beforeAll(async () => {
  database = await createTempMysqlDatabase('sak_traps');
  storage = await open();
  raw = await mysql.createConnection({ uri: database.url });
});
afterAll(async () => {
  await raw?.end();
  await storage?.close();
  await database?.drop();
});

describe('affected rows: found vs changed (CLIENT_FOUND_ROWS)', () => {
  it('a replayed claim is refused, though the same statement on a default mysql2 connection reports a row', async () => {
    const id = randomUUID();
    const until = new Date(Date.now() + 60_000);
    expect(await storage.claimOnce('launch-jti', id, until)).toBe(true);
    expect(await storage.claimOnce('launch-jti', id, until)).toBe(false);
    expect(await storage.claimOnce('launch-jti', id, new Date(Date.now() + 120_000))).toBe(false);

    // The trap the kit avoids: mysql2's default flags count the untouched
    // duplicate as one affected row, which would read as "claimed".
    const found = await mysql.createConnection({ uri: database.url });
    try {
      const [r] = await found.query(
        'INSERT INTO store_app_claims (namespace, id, expires_at) VALUES (?, ?, ?) ' +
          'ON DUPLICATE KEY UPDATE expires_at = IF(expires_at < ?, VALUES(expires_at), expires_at)',
        ['launch-jti', id, '2999-01-01 00:00:00.000', '2000-01-01 00:00:00.000'],
      );
      expect((r as mysql.ResultSetHeader).affectedRows).toBe(1);
    } finally {
      await found.end();
    }
  });

  it('an expired claim is taken over once, then refused again', async () => {
    const id = randomUUID();
    expect(await storage.claimOnce('ns', id, new Date(Date.now() - 1))).toBe(true);
    const until = new Date(Date.now() + 60_000);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => storage.claimOnce('ns', id, until)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('a redelivered webhook id and a second pending purge of one event are duplicates', async () => {
    const id = `wh-${randomUUID()}`;
    let runs = 0;
    const effects = async () => {
      runs++;
      await storage.pendingPurges.add({ eventId: id, storeId: 's', eventAt: new Date() });
      await storage.pendingPurges.add({ eventId: id, storeId: 's', eventAt: new Date() });
      return runs;
    };
    expect(await storage.webhooks.runOnce(id, 'app.uninstalled', effects)).toEqual({
      duplicate: false,
      result: 1,
    });
    expect(await storage.webhooks.runOnce(id, 'app.uninstalled', effects)).toEqual({
      duplicate: true,
    });
    expect((await storage.pendingPurges.list()).filter((p) => p.eventId === id)).toHaveLength(1);
  });

  it('an update that matches a row but changes nothing still counts (as on Postgres and SQLite)', async () => {
    const storeId = `lease-${randomUUID()}`;
    const { version } = await storage.installations.upsert(storeId, tokens('lease'));
    // One frozen instant: the second write stores exactly the values already there.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const lease = () => storage.installations.acquireRefreshLease(storeId, version, 'a', 60_000);
      expect(await lease()).toBe(true);
      expect(await lease()).toBe(true);
      expect(await storage.installations.acquireRefreshLease(storeId, version, 'b', 60_000)).toBe(
        false,
      );
      expect(await storage.installations.markNeedsReauth(storeId)).toBe(true);
      expect(await storage.installations.markNeedsReauth(storeId)).toBe(true);
      expect(await storage.installations.markNeedsReauth(storeId, version + 5)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('completeRefresh commits for the lease holder only, and returns the row it wrote', async () => {
    const storeId = `refresh-${randomUUID()}`;
    const { version } = await storage.installations.upsert(storeId, tokens('r0'));
    expect(await storage.installations.acquireRefreshLease(storeId, version, 'a', 60_000)).toBe(
      true,
    );
    expect(await storage.installations.completeRefresh(storeId, 'b', tokens('x'))).toBeNull();
    const done = await storage.installations.completeRefresh(storeId, 'a', tokens('r1'));
    expect(done).toMatchObject({ accessToken: 'at-r1', version: version + 1 });
    expect(await storage.installations.completeRefresh(storeId, 'a', tokens('r2'))).toBeNull();
  });
});

describe('deadlocks and lock waits', () => {
  const counters = mysqlTable('app_counters', {
    id: int('id').primaryKey(),
    n: int('n').notNull(),
  });

  beforeAll(async () => {
    await raw.query('CREATE TABLE app_counters (id int PRIMARY KEY, n int NOT NULL)');
    await raw.query('INSERT INTO app_counters VALUES (1, 0), (2, 0)');
  });

  it('kit connections run at READ COMMITTED, as on Postgres (fewer gap locks than InnoDB’s default)', async () => {
    const isolation = await storage.transaction(async (tx) => {
      const [r] = await tx.execute(sql`SELECT @@SESSION.tx_isolation AS iso`);
      return (r as Array<{ iso: string }>)[0]?.iso;
    });
    expect(isolation).toBe('READ-COMMITTED');
  });

  it('a webhook whose effects deadlock with another is retried and both run once', async () => {
    const other = await open();
    try {
      const before = await raw.query('SELECT SUM(n) AS n FROM app_counters');
      const sumBefore = Number((before[0] as Array<{ n: unknown }>)[0]?.n);
      let arrived = 0;
      let release!: () => void;
      const bothLocked = new Promise<void>((r) => {
        release = r;
      });
      let attempts = 0;
      const effects =
        (first: number, second: number) =>
        // biome-ignore lint/suspicious/noExplicitAny: the MySQL transaction handle.
        async (tx: any) => {
          attempts++;
          await tx.update(counters).set({ n: sql`n + 1` }).where(sql`id = ${first}`);
          if (++arrived === 2) release();
          await bothLocked;
          await tx.update(counters).set({ n: sql`n + 1` }).where(sql`id = ${second}`);
          return first;
        };
      const results = await Promise.all([
        storage.webhooks.runOnce(`dl-${randomUUID()}`, 't', effects(1, 2)),
        other.webhooks.runOnce(`dl-${randomUUID()}`, 't', effects(2, 1)),
      ]);
      expect(results).toEqual([
        { duplicate: false, result: 1 },
        { duplicate: false, result: 2 },
      ]);
      // One of the two was the deadlock victim and ran again after its rollback.
      expect(attempts).toBe(3);
      const after = await raw.query('SELECT SUM(n) AS n FROM app_counters');
      expect(Number((after[0] as Array<{ n: unknown }>)[0]?.n)).toBe(sumBefore + 4);
    } finally {
      await other.close();
    }
  });

  it("the app's own transaction is never re-run: a deadlock rejects with StorageError (503) and rolls back", async () => {
    const other = await open();
    try {
      let arrived = 0;
      let release!: () => void;
      const bothLocked = new Promise<void>((r) => {
        release = r;
      });
      let attempts = 0;
      const work =
        (first: number, second: number) =>
        // biome-ignore lint/suspicious/noExplicitAny: the MySQL transaction handle.
        async (tx: any) => {
          attempts++;
          await tx.update(counters).set({ n: sql`n + 100` }).where(sql`id = ${first}`);
          if (++arrived === 2) release();
          await bothLocked;
          await tx.update(counters).set({ n: sql`n + 100` }).where(sql`id = ${second}`);
        };
      const before = Number(
        ((await raw.query('SELECT SUM(n) AS n FROM app_counters'))[0] as Array<{ n: unknown }>)[0]
          ?.n,
      );
      const settled = await Promise.allSettled([
        storage.transaction(work(1, 2)),
        other.transaction(work(2, 1)),
      ]);
      expect(attempts).toBe(2);
      const failed = settled.filter((s) => s.status === 'rejected');
      expect(failed).toHaveLength(1);
      const err = (failed[0] as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(StorageError);
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
      expect((err as Error).message).toContain('ER_LOCK_DEADLOCK');
      const after = Number(
        ((await raw.query('SELECT SUM(n) AS n FROM app_counters'))[0] as Array<{ n: unknown }>)[0]
          ?.n,
      );
      // Only the survivor's two increments landed.
      expect(after).toBe(before + 200);
    } finally {
      await other.close();
    }
  });

  /** A storage on one connection whose lock waits give up after 1 s, with a hook on each retry. */
  async function shortWaits(onRetry: () => void) {
    const logger = pino({ level: 'debug' }, { write: () => undefined });
    const debug = logger.debug.bind(logger);
    logger.debug = ((obj: unknown, msg?: string) => {
      if (msg === 'mysql lock conflict; retrying') onRetry();
      return debug(obj as object, msg as string);
    }) as typeof logger.debug;
    const s = await open({ pool: { max: 1 }, logger });
    await s.db.execute(sql`SET SESSION innodb_lock_wait_timeout = 1`);
    // Prune expired claims now, so the claims below run their one statement only.
    await s.claimOnce('warm', randomUUID(), new Date(Date.now() + 60_000));
    return s;
  }

  it('a lock wait timeout is retried: the claim succeeds once the other transaction rolls back', async () => {
    const holder = await mysql.createConnection({ uri: database.url });
    const id = randomUUID();
    let retries = 0;
    const s = await shortWaits(() => {
      retries++;
      if (retries === 1) void holder.query('ROLLBACK');
    });
    try {
      await holder.query('BEGIN');
      await holder.query(
        'INSERT INTO store_app_claims (namespace, id, expires_at) VALUES (?, ?, ?)',
        ['ns', id, '2999-01-01 00:00:00.000'],
      );
      expect(await s.claimOnce('ns', id, new Date(Date.now() + 60_000))).toBe(true);
      expect(retries).toBe(1);
    } finally {
      await s.close();
      await holder.end();
    }
  });

  it(`a lock held past ${MYSQL_LOCK_ATTEMPTS} waits is a StorageError (503) naming ER_LOCK_WAIT_TIMEOUT`, async () => {
    const holder = await mysql.createConnection({ uri: database.url });
    const id = randomUUID();
    let retries = 0;
    const s = await shortWaits(() => {
      retries++;
    });
    try {
      await holder.query('BEGIN');
      await holder.query(
        'INSERT INTO store_app_claims (namespace, id, expires_at) VALUES (?, ?, ?)',
        ['ns', id, '2999-01-01 00:00:00.000'],
      );
      const err = await s.claimOnce('ns', id, new Date(Date.now() + 60_000)).catch((e) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
      expect((err as Error).message).toContain('ER_LOCK_WAIT_TIMEOUT');
      expect(retries).toBe(MYSQL_LOCK_ATTEMPTS - 1);
    } finally {
      await holder.query('ROLLBACK');
      await s.close();
      await holder.end();
    }
  });
});

describe('indexed text: length and letter case', () => {
  it('keys at their longest fit the index (store id 255, webhook and claim ids 256)', async () => {
    const storeId = `s${'x'.repeat(254)}`;
    await storage.installations.upsert(storeId, tokens('long'));
    expect((await storage.installations.get(storeId))?.storeId).toBe(storeId);
    const longId = 'w'.repeat(256);
    expect((await storage.webhooks.runOnce(longId, 't', async () => 1)).duplicate).toBe(false);
    expect((await storage.webhooks.runOnce(longId, 't', async () => 1)).duplicate).toBe(true);
    const ns = 'n'.repeat(256);
    expect(await storage.claimOnce(ns, 'é'.repeat(256), new Date(Date.now() + 60_000))).toBe(true);
  });

  it('ids differing only in letter case or accents are different rows, as on Postgres and SQLite', async () => {
    const base = randomUUID();
    await storage.installations.upsert(`Acme-${base}`, tokens('upper'));
    await storage.installations.upsert(`acme-${base}`, tokens('lower'));
    expect((await storage.installations.get(`Acme-${base}`))?.accessToken).toBe('at-upper');
    expect((await storage.installations.get(`acme-${base}`))?.accessToken).toBe('at-lower');
    expect((await storage.webhooks.runOnce(`ABC-${base}`, 't', async () => 1)).duplicate).toBe(
      false,
    );
    expect((await storage.webhooks.runOnce(`abc-${base}`, 't', async () => 1)).duplicate).toBe(
      false,
    );
    const until = new Date(Date.now() + 60_000);
    expect(await storage.claimOnce('ns', `e-${base}`, until)).toBe(true);
    expect(await storage.claimOnce('ns', `é-${base}`, until)).toBe(true);
  });
});

describe('DATETIME precision', () => {
  it('milliseconds survive the round trip and order expiries', async () => {
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000 + 987);
    const storeId = `ms-${randomUUID()}`;
    await storage.installations.upsert(storeId, tokens('ms', at));
    const row = await storage.installations.get(storeId);
    expect(row?.accessTokenExpiresAt.getTime()).toBe(at.getTime());
    const listed = (before: Date) => storage.installations.listExpiringBefore(before, 10_000);
    expect(await listed(new Date(at.getTime() + 1))).toContain(storeId);
    expect(await listed(at)).not.toContain(storeId);
  });

  it('a claim expiring 1 ms ago is free again; one expiring in 1 s is not', async () => {
    const id = randomUUID();
    const now = Date.now();
    expect(await storage.claimOnce('ms', id, new Date(now + 1000))).toBe(true);
    expect(await storage.claimOnce('ms', id, new Date(now + 2000))).toBe(false);
    const expired = randomUUID();
    expect(await storage.claimOnce('ms', expired, new Date(now - 1))).toBe(true);
    expect(await storage.claimOnce('ms', expired, new Date(now + 2000))).toBe(true);
  });
});

describe('migrations', () => {
  it('two processes starting together on an empty database migrate once (GET_LOCK)', async () => {
    const fresh = await createTempMysqlDatabase('sak_migrate');
    try {
      const both = await Promise.all(
        [0, 1].map(() => createStorage({ databaseUrl: fresh.url, encryptionKeys: keys })),
      );
      await Promise.all(both.map((s) => s.close()));
      const c = await mysql.createConnection({ uri: fresh.url });
      try {
        const [applied] = await c.query(`SELECT COUNT(*) AS n FROM \`${MIGRATIONS_TABLE}\``);
        const files = readFileSync(
          join(import.meta.dirname, '..', '..', 'migrations', 'mysql', 'meta', '_journal.json'),
          'utf8',
        );
        expect(Number((applied as Array<{ n: unknown }>)[0]?.n)).toBe(
          (JSON.parse(files) as { entries: unknown[] }).entries.length,
        );
        const [tables] = await c.query(
          "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'store\\_app\\_%' ORDER BY 1",
        );
        expect((tables as Array<{ t: string }>).map((r) => r.t)).toEqual([
          'store_app_claims',
          'store_app_installations',
          'store_app_pending_purges',
          'store_app_purge_audit',
          'store_app_sessions',
          'store_app_webhook_deliveries',
        ]);
      } finally {
        await c.end();
      }
    } finally {
      await fresh.drop();
    }
  });
});

describe('unavailable server', () => {
  it('a closed port is a StorageError (503) at start, and the password is nowhere in it', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    const err = await createStorage({
      databaseUrl: `mysql://app:s3cretpw@127.0.0.1:${port}/nope`,
      encryptionKeys: keys,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(JSON.stringify(err)).not.toContain('s3cretpw');
    expect((err as Error).message).not.toContain('s3cretpw');
  });

  it('a connection killed mid-transaction is a StorageError (503), no parameters in it; the next transaction works', async () => {
    const s = await open({ pool: { max: 2 } });
    try {
      await s.db.execute(
        sql`CREATE TABLE IF NOT EXISTS app_items (id varchar(64) PRIMARY KEY, secret text)`,
      );
      const err = await s
        .transaction(async (tx) => {
          const [r] = await tx.execute(sql`SELECT CONNECTION_ID() AS id`);
          const id = Number((r as Array<{ id: number }>)[0]?.id);
          const admin = await mysqlAdmin();
          await admin.query(`KILL ${id}`);
          await admin.end();
          await tx.execute(
            sql`INSERT INTO app_items (id, secret) VALUES (${'a'}, ${'hunter2-param'})`,
          );
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect(err).toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
      expect((err as Error).cause).toBeDefined();
      expect((err as Error).message).not.toContain('hunter2-param');
      // The pool dropped the dead connection.
      await s.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO app_items (id) VALUES (${'after'})`);
      });
      const [rows] = await s.db.execute(sql`SELECT id FROM app_items`);
      expect((rows as Array<{ id: string }>).map((r) => r.id)).toEqual(['after']);
    } finally {
      await s.close();
    }
  });
});

describe('local files', () => {
  it('kit connections do not offer LOAD DATA LOCAL: the server cannot ask the app for a file', async () => {
    await raw.query('CREATE TABLE app_lines (line text)');
    const err = await storage.db
      .execute(sql.raw("LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE app_lines"))
      .catch((e: unknown) => e);
    // The app's own statement: Drizzle's error, with the server's refusal underneath
    // (MySQL 1148 ER_NOT_ALLOWED_COMMAND, MariaDB 4166 ER_LOAD_INFILE_CAPABILITY_DISABLED).
    // mysql2's default connection would instead have been asked for the file.
    const errno = ((err as Error).cause as { errno?: number } | undefined)?.errno;
    expect([1148, 4166]).toContain(errno);
    const [rows] = await raw.query('SELECT COUNT(*) AS n FROM app_lines');
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  });
});

describe('scrub after a purge (InnoDB)', () => {
  const notes = mysqlTable('app_scrub_notes', {
    id: int('id').autoincrement().primaryKey(),
    storeId: varchar('store_id', { length: 255 }).notNull(),
    body: text('body').notNull(),
  });

  it("OPTIMIZE TABLE rebuilds the touched tables: the purged store's marker is gone from the .ibd file", async () => {
    const [dirRows] = await raw.query('SELECT @@datadir AS d, @@innodb_file_per_table AS fpt');
    const { d: datadir, fpt } = (dirRows as Array<{ d: string; fpt: number }>)[0]!;
    expect(fpt).toBe(1);
    const file = join(datadir, database.name, 'app_scrub_notes.ibd');
    await raw.query(
      'CREATE TABLE app_scrub_notes (id int AUTO_INCREMENT PRIMARY KEY, store_id varchar(255) NOT NULL, body text NOT NULL, KEY (store_id))',
    );
    const gone = randomUUID();
    const kept = randomUUID();
    const marker = `MERCHANT-SECRET-${randomBytes(6).toString('hex')}`;
    const keptMarker = `KEPT-${randomBytes(6).toString('hex')}`;
    await storage.installations.upsert(gone, tokens('gone'));
    for (let i = 0; i < 4; i++) {
      await storage.db
        .insert(notes)
        .values(
          Array.from({ length: 250 }, (_, j) => ({ storeId: gone, body: `${marker} #${i}-${j}` })),
        );
    }
    await storage.db.insert(notes).values({ storeId: kept, body: keptMarker });
    // InnoDB writes pages to the file at its own pace: FLUSH … FOR EXPORT writes them now.
    await raw.query('FLUSH TABLES app_scrub_notes FOR EXPORT');
    await raw.query('UNLOCK TABLES');
    if (!existsSync(file)) {
      throw new Error(
        `this test reads the server's table file ${file}: run it against the MariaDB of this machine, as root`,
      );
    }
    const count = (needle: string) =>
      readFileSync(file).toString('latin1').split(needle).length - 1;
    expect(count(marker)).toBeGreaterThan(0);

    const result = await storage.purge(gone, { tables: [notes] });
    expect(result).toMatchObject({ purged: true, scrubbed: true });
    expect(result.counts['app_scrub_notes']).toBe(1000);
    await raw.query('FLUSH TABLES app_scrub_notes FOR EXPORT');
    await raw.query('UNLOCK TABLES');
    expect(count(marker)).toBe(0);
    expect(count(keptMarker)).toBe(1);
  });
});
