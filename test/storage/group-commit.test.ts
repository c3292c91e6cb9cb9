/**
 * Group commit on SQLite: deliveries that arrive together share one COMMIT
 * (one fsync), and each keeps the semantics of its own `runOnce`.
 * Real SQLite files; a second connection reads what is durable.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createGroupCommit, type GroupCommitConnection } from '../../src/storage/group-commit.js';
import { createStorage, type Storage } from '../../src/storage/index.js';

const keys = [generateKey()];

let dir: string;
let file: string;
let storage: Storage;
let reader: Database.Database;

const sqliteOf = (tx: unknown) => tx as BetterSQLite3Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sak-group-commit-'));
  file = join(dir, 'app.db');
  storage = await createStorage({ databaseUrl: `file:${file}`, encryptionKeys: keys });
  await storage.migrate();
  await storage.transaction(async (tx) => {
    const db = sqliteOf(tx);
    db.run(sql`CREATE TABLE orders (id TEXT PRIMARY KEY)`);
    db.run(sql`CREATE TABLE parents (id TEXT PRIMARY KEY)`);
    db.run(
      sql`CREATE TABLE children (id TEXT PRIMARY KEY, parent TEXT REFERENCES parents(id) DEFERRABLE INITIALLY DEFERRED)`,
    );
  });
  // Another connection sees only what was committed.
  reader = new Database(file, { readonly: true });
});

afterEach(async () => {
  reader.close();
  await storage.close();
  rmSync(dir, { recursive: true, force: true });
});

const committedOrders = () =>
  (reader.prepare('SELECT id FROM orders ORDER BY id').all() as Array<{ id: string }>).map(
    (r) => r.id,
  );
const recorded = (id: string) =>
  reader.prepare('SELECT 1 FROM store_app_webhook_deliveries WHERE webhook_id = ?').get(id) !==
  undefined;

/** A delivery whose handler writes one order row. */
const deliver = (id: string, fail?: Error) =>
  storage.webhooks.runOnce(id, 'orders.create', async (tx) => {
    sqliteOf(tx).run(sql`INSERT INTO orders (id) VALUES (${`order-${id}`})`);
    if (fail) throw fail;
    return id;
  });

const walBytes = () => statSync(`${file}-wal`).size;

describe('SQLite group commit of webhook deliveries', () => {
  it('deliveries that arrive together share one COMMIT: the WAL grows by a few pages, not one commit each', async () => {
    // One at a time: every delivery is its own commit.
    const before = walBytes();
    for (let i = 0; i < 20; i++) await deliver(`alone-${i}`);
    const alone = walBytes() - before;

    const start = walBytes();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => deliver(`group-${i}`)));
    const grouped = walBytes() - start;

    expect(results.every((r) => !r.duplicate)).toBe(true);
    expect(committedOrders()).toHaveLength(40);
    // Each commit appends at least one page frame (4 KiB + header).
    expect(alone).toBeGreaterThanOrEqual(20 * 4096);
    expect(grouped).toBeLessThan(alone / 4);
  });

  it('no delivery settles before the COMMIT that makes it durable', async () => {
    const seen: Array<{ id: string; durable: boolean; order: boolean }> = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        deliver(`d-${i}`).then(() => {
          // Read at the moment the caller would answer the platform.
          seen.push({
            id: `d-${i}`,
            durable: recorded(`d-${i}`),
            order: committedOrders().includes(`order-d-${i}`),
          });
        }),
      ),
    );
    expect(seen).toHaveLength(10);
    for (const s of seen) expect(s).toMatchObject({ durable: true, order: true });
  });

  it('a handler that throws undoes only its own delivery: the others in its group commit', async () => {
    const boom = new Error('handler failed');
    const results = await Promise.allSettled([
      deliver('ok-1'),
      deliver('bad', boom),
      deliver('ok-2'),
    ]);
    expect(results[0]).toEqual({
      status: 'fulfilled',
      value: { duplicate: false, result: 'ok-1' },
    });
    // The app's own error, unchanged.
    expect(results[1]).toEqual({ status: 'rejected', reason: boom });
    expect(results[2]).toEqual({
      status: 'fulfilled',
      value: { duplicate: false, result: 'ok-2' },
    });
    expect(committedOrders()).toEqual(['order-ok-1', 'order-ok-2']);
    expect(recorded('bad')).toBe(false);
    // Its retry is new and runs.
    expect(await deliver('bad')).toEqual({ duplicate: false, result: 'bad' });
    expect(await deliver('ok-1')).toEqual({ duplicate: true });
  });

  it('one id twice in one group runs its effects once; after a failed first, the second runs', async () => {
    let runs = 0;
    const twice = () =>
      storage.webhooks.runOnce('same', 't', async () => {
        runs++;
      });
    const outcomes = await Promise.all([twice(), twice()]);
    expect(runs).toBe(1);
    expect(outcomes.map((o) => o.duplicate).sort()).toEqual([false, true]);

    const boom = new Error('first attempt failed');
    const [first, second] = await Promise.allSettled([deliver('retry', boom), deliver('retry')]);
    expect(first).toEqual({ status: 'rejected', reason: boom });
    expect(second).toEqual({
      status: 'fulfilled',
      value: { duplicate: false, result: 'retry' },
    });
    expect(committedOrders()).toContain('order-retry');
  });

  it('a delivery that breaks the COMMIT (a deferred foreign key) fails alone: its group-mates run again one transaction each and commit', async () => {
    const runs = { g1: 0, uninstall: 0, breaker: 0 };
    const results = await Promise.allSettled([
      storage.webhooks.runOnce('g-1', 'orders.create', async (tx) => {
        runs.g1++;
        sqliteOf(tx).run(sql`INSERT INTO orders (id) VALUES ('order-g-1')`);
      }),
      storage.webhooks.runOnce('g-uninstall', 'app.uninstalled', async (_tx, delivery) => {
        runs.uninstall++;
        await delivery.addPendingPurge({
          eventId: 'g-uninstall',
          storeId: 's1',
          eventAt: new Date(),
        });
      }),
      // Checked only at COMMIT: in a shared transaction nobody knows whose it is.
      storage.webhooks.runOnce('g-breaks-commit', 'orders.create', async (tx) => {
        runs.breaker++;
        sqliteOf(tx).run(sql`INSERT INTO children (id, parent) VALUES ('c', 'missing')`);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      message: expect.stringContaining('SQLITE_CONSTRAINT_FOREIGNKEY'),
    });
    // Their first run was rolled back unanswered; the second committed.
    expect(runs).toEqual({ g1: 2, uninstall: 2, breaker: 2 });
    expect(committedOrders()).toEqual(['order-g-1']);
    expect(recorded('g-1') && recorded('g-uninstall')).toBe(true);
    expect(recorded('g-breaks-commit')).toBe(false);
    expect((await storage.pendingPurges.list()).map((p) => p.eventId)).toEqual(['g-uninstall']);
    // The connection is usable again.
    expect(await deliver('after')).toEqual({ duplicate: false, result: 'after' });
  });

  it('a flood of deliveries does not starve other writers: a write asked for during the first group commits before the flood ends', async () => {
    const order: string[] = [];
    const deliveries = Array.from({ length: 4 * 64 }, (_, i) =>
      storage.webhooks
        .runOnce(`flood-${i}`, 'orders.create', async () => {
          if (i === 0) {
            // Outside the delivery's transaction: the next turn, after its handler returned.
            setImmediate(() => {
              void storage.pendingPurges
                .add({ eventId: 'other-writer', storeId: 's', eventAt: new Date() })
                .then(() => order.push('other writer'));
            });
          }
        })
        .then(() => order.push(`delivery ${i}`)),
    );
    await Promise.all(deliveries);
    expect(order).toContain('other writer');
    expect(order.indexOf('other writer')).toBeLessThan(order.indexOf(`delivery ${4 * 64 - 1}`));
  });

  it("each grouped handler runs in its own caller's async context (its request scope, its trace span), inside the transaction", async () => {
    const request = new AsyncLocalStorage<string>();
    const seen: Array<[string, string | undefined]> = [];
    await Promise.all(
      ['r1', 'r2', 'r3'].map((id) =>
        request
          .run(id, () =>
            storage.webhooks.runOnce(`ctx-${id}`, 'orders.create', async (tx) => {
              seen.push([id, request.getStore()]);
              // Kit calls inside the handler still join the delivery's transaction.
              sqliteOf(tx).run(sql`INSERT INTO orders (id) VALUES (${`order-${id}`})`);
              await storage.pendingPurges.add({
                eventId: `e-${id}`,
                storeId: id,
                eventAt: new Date(),
              });
              if (id === 'r2') throw new Error('roll back r2');
            }),
          )
          .catch(() => undefined),
      ),
    );
    expect(seen).toEqual([
      ['r1', 'r1'],
      ['r2', 'r2'],
      ['r3', 'r3'],
    ]);
    // r2's purge entry, written through the kit inside its handler, went with its rollback.
    expect((await storage.pendingPurges.list()).map((p) => p.eventId).sort()).toEqual([
      'e-r1',
      'e-r3',
    ]);
  });

  it('close() commits a group still waiting for its turn instead of failing it', async () => {
    const pending = deliver('late');
    await storage.close();
    expect(await pending).toEqual({ duplicate: false, result: 'late' });
    expect(recorded('late')).toBe(true);
    // afterEach closes again: a second close is harmless.
  });

  it('a delivery inside an app transaction joins that transaction instead of a group', async () => {
    await expect(
      storage.transaction(async () => {
        await deliver('inside');
        throw new Error('app rolls back');
      }),
    ).rejects.toThrow('app rolls back');
    expect(recorded('inside')).toBe(false);
  });
});

/** A connection double that logs the statements, for the cases real SQLite rarely produces. */
function fakeConnection(opts: { dropTransactionOn?: string; commitFails?: string } = {}) {
  const log: string[] = [];
  let open = false;
  let locked: Promise<unknown> = Promise.resolve();
  const conn: GroupCommitConnection = {
    withLock(fn) {
      const r = locked.then(fn);
      locked = r.catch(() => undefined);
      return r;
    },
    begin: () => {
      log.push('BEGIN');
      open = true;
    },
    commit: () => {
      log.push('COMMIT');
      if (opts.commitFails) throw new Error(opts.commitFails);
      open = false;
    },
    rollback: () => {
      log.push('ROLLBACK');
      open = false;
    },
    savepoint: (n) => log.push(`SAVEPOINT ${n}`),
    release: (n) => log.push(`RELEASE ${n}`),
    rollbackTo: (n) => {
      log.push(`ROLLBACK TO ${n}`);
      return true;
    },
    inTransaction: () => open,
    async run(body) {
      try {
        return await body();
      } catch (err) {
        if ((err as Error).message === opts.dropTransactionOn) open = false;
        throw err;
      }
    },
    memberError: (err) => err,
    groupError: (err) => Object.assign(new Error('group failed'), { cause: err }),
    memberMayHaveFailedCommit: (err) => (err as Error).message === 'constraint',
  };
  return { conn, log };
}

describe('group commit when the database fails', () => {
  it('a COMMIT the database refuses (disk full) rejects every member, none runs again', async () => {
    const { conn, log } = fakeConnection({ commitFails: 'disk full' });
    const group = createGroupCommit(conn);
    let runs = 0;
    const results = await Promise.allSettled([1, 2, 3].map(() => group.run(async () => ++runs)));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(results[0]).toMatchObject({ reason: { message: 'group failed' } });
    expect(runs).toBe(3);
    expect(log.filter((s) => /^(BEGIN|COMMIT|ROLLBACK)$/.test(s))).toEqual([
      'BEGIN',
      'COMMIT',
      'ROLLBACK',
    ]);
  });

  it('members that ran before lose their writes and reject; members not yet run go to the next group and commit', async () => {
    const { conn, log } = fakeConnection({ dropTransactionOn: 'disk full' });
    const group = createGroupCommit(conn);
    const results = await Promise.allSettled([
      group.run(async () => 'a'),
      group.run(async () => {
        throw new Error('disk full');
      }),
      group.run(async () => 'c'),
    ]);
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { message: 'group failed' } });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { message: 'disk full' } });
    expect(results[2]).toEqual({ status: 'fulfilled', value: 'c' });
    expect(log.filter((s) => /^(BEGIN|COMMIT|ROLLBACK)$/.test(s))).toEqual([
      'BEGIN',
      'ROLLBACK',
      'BEGIN',
      'COMMIT',
    ]);
  });

  it('a group holds at most MAX_GROUP_SIZE members; the rest commit in the next one', async () => {
    const { conn, log } = fakeConnection();
    const group = createGroupCommit(conn, 4);
    const values = await Promise.all(
      Array.from({ length: 10 }, (_, i) => group.run(async () => i)),
    );
    expect(values).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(log.filter((s) => s === 'COMMIT')).toHaveLength(3);
  });
});
