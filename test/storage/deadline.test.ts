/**
 * A database that hangs (connections kept open, nothing answered) or a SQLite
 * write lock held by another process: every storage operation fails with a
 * StorageError of reason `timeout` (or `locked`) within the deadline
 * (`storage.timeoutMs`, default 2 s) instead of stalling, the kit's routes
 * answer 503 with Retry-After, and everything recovers without a restart.
 * Real Postgres and MariaDB behind a TCP proxy that stops forwarding.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { StorageError } from '../../src/errors/index.js';
import { createPurgeOutbox } from '../../src/purge/outbox.js';
import { createTokenManager } from '../../src/refresh/manager.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';
import { createStorage } from '../../src/storage/index.js';
import type {
  InstallationRepository,
  PendingPurgeRepository,
  Storage,
} from '../../src/storage/types.js';
import { startHangingProxy } from '../helpers/hanging-proxy.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase } from '../helpers/postgres.js';
import { Browser, begin, startHarness } from '../install/harness.js';
import { newSecret, signDelivery, uninstallPayload } from '../webhooks/fixtures.js';

/** The default deadline, and what a loaded 2-core machine may add to it. */
const DEADLINE_MS = 2000;
const SLACK_MS = 1200;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const tokens = (n: number) => ({
  scopes: ['read_products'],
  accessToken: `access-${n}`,
  refreshToken: `refresh-${n}`,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
});

/** Runs `op` and returns how it ended and when. */
async function timed(op: () => Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const t0 = performance.now();
  try {
    await op();
    return { ms: performance.now() - t0, err: undefined };
  } catch (err) {
    return { ms: performance.now() - t0, err };
  }
}

async function recovers(storage: Storage, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      await storage.installations.upsert('after', tokens(99));
      expect((await storage.installations.get('after'))?.accessToken).toBe('access-99');
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Every kind of operation, more of them than the pool has connections. */
function requestPathOps(storage: Storage): Array<() => Promise<unknown>> {
  return [
    ...Array.from({ length: 12 }, (_, i) => () => storage.installations.get(`s${i % 3}`)),
    () => storage.installations.upsert('s9', tokens(9)),
    () => storage.claimOnce('test', `id-${Math.random()}`, new Date(Date.now() + 60_000)),
    () => storage.pendingPurges.list(),
    () => storage.transaction(async () => storage.installations.get('s1')),
  ];
}

describe.each([
  ['Postgres', 5432, () => createTempDatabase('sak_deadline')],
  ['MariaDB', 3306, () => createTempMysqlDatabase('sak_deadline')],
])('%s behind a proxy that stops forwarding', (_name, port, createDb) => {
  it('every operation fails with reason timeout within the deadline, then recovers without a restart', async () => {
    const db = await createDb();
    cleanups.push(() => db.drop());
    const proxy = await startHangingProxy(port);
    cleanups.push(() => proxy.close());
    const storage = await createStorage({
      databaseUrl: proxy.via(db.url),
      encryptionKeys: [generateKey()],
    });
    cleanups.push(() => storage.close());
    await storage.installations.upsert('s1', tokens(1));

    proxy.hang();
    const results = await Promise.all(requestPathOps(storage).map(timed));
    for (const r of results) {
      expect(r.err).toBeInstanceOf(StorageError);
      expect((r.err as StorageError).reason).toBe('timeout');
      expect((r.err as StorageError).message).toMatch(/did not answer within the storage deadline/);
      expect(r.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
    }
    // Still hung: a second wave fails in time too (nothing piled up behind the first).
    const second = await Promise.all(requestPathOps(storage).slice(0, 4).map(timed));
    for (const r of second) expect(r.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);

    proxy.resume();
    await recovers(storage);
  }, 60_000);

  it('stalls do not take connections from the pool for good: after three, transactions still run two at a time and close() returns', async () => {
    const db = await createDb();
    cleanups.push(() => db.drop());
    const proxy = await startHangingProxy(port);
    cleanups.push(() => proxy.close());
    const storage = await createStorage({
      databaseUrl: proxy.via(db.url),
      encryptionKeys: [generateKey()],
      pool: { max: 2 },
      timeoutMs: 600,
    });
    let closed = false;
    cleanups.push(() => (closed ? undefined : storage.close()));
    await storage.installations.upsert('s1', tokens(1));

    for (let stall = 0; stall < 3; stall++) {
      proxy.hang();
      // More transactions than connections: some wait for one, and get it only once the
      // stalled statements give theirs back, with the network still stalled (their BEGIN fails).
      const failed = await Promise.all(
        Array.from({ length: 6 }, () =>
          timed(() => storage.transaction(async () => storage.installations.get('s1'))),
        ),
      );
      for (const r of failed) expect(r.err).toBeInstanceOf(StorageError);
      await new Promise((r) => setTimeout(r, 1500));
      proxy.resume();
      await recovers(storage);
    }

    // Both connections are usable: two transactions hold one each at the same time.
    let inside = 0;
    let together = false;
    const both = await Promise.all(
      [1, 2].map(() =>
        timed(() =>
          storage.transaction(async () => {
            inside++;
            await storage.installations.get('s1');
            for (let i = 0; i < 20 && inside < 2; i++) await new Promise((r) => setTimeout(r, 20));
            together ||= inside === 2;
            await storage.installations.get('s1');
            inside--;
          }),
        ),
      ),
    );
    for (const r of both) expect(r.err).toBeUndefined();
    expect(together).toBe(true);
    // pg's pool.end() waits for every checked-out connection: a lost one hung it for ever.
    const closing = await timed(() => storage.close());
    closed = true;
    expect(closing.err).toBeUndefined();
    expect(closing.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
  }, 90_000);
});

describe('SQLite with the write lock held by another process', () => {
  it('writes fail with reason locked within the deadline, queued ones do not add up, and work again once the lock is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-deadline-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'app.db');
    const storage = await createStorage({ databaseUrl: file, encryptionKeys: [generateKey()] });
    cleanups.push(() => storage.close());
    await storage.installations.upsert('s1', tokens(1));

    const holder: ChildProcess = spawn(
      process.execPath,
      [
        '-e',
        `const D = require('better-sqlite3'); const d = new D(${JSON.stringify(file)});
         d.exec('BEGIN IMMEDIATE'); console.log('locked'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanups.push(() => {
      holder.kill('SIGKILL');
    });
    await new Promise<void>((resolve) => holder.stdout?.once('data', () => resolve()));

    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        timed(() => storage.installations.upsert(`w${i}`, tokens(i))),
      ),
    );
    const total = performance.now() - t0;
    for (const r of results) {
      expect(r.err).toBeInstanceOf(StorageError);
      expect(['locked', 'timeout']).toContain((r.err as StorageError).reason);
    }
    expect((results[0]!.err as StorageError).reason).toBe('locked');
    // One lock wait of the deadline, not five of them in a row.
    expect(total).toBeLessThan(DEADLINE_MS + SLACK_MS);
    // Reads are not blocked by a writer (WAL).
    expect((await storage.installations.get('s1'))?.accessToken).toBe('access-1');

    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    await recovers(storage);
  }, 60_000);
});

describe('the kit on a hanging Postgres', () => {
  it('the install callback and a signed webhook answer 503 STORAGE_UNAVAILABLE with Retry-After within the deadline, and work once the database answers again', async () => {
    const db = await createTempDatabase('sak_deadline_kit');
    cleanups.push(() => db.drop());
    const proxy = await startHangingProxy(5432);
    cleanups.push(() => proxy.close());
    const secret = newSecret();
    const h = await startHarness({
      databaseUrl: proxy.via(db.url),
      kit: { webhooks: { secrets: secret } },
    });
    const deliver = (id: string) => {
      const d = signDelivery(secret, uninstallPayload(`st_${id}`), { id });
      return fetch(`${h.appUrl}/webhooks`, { method: 'POST', headers: d.headers, body: d.body });
    };
    cleanups.push(() => h.close());

    const browser = new Browser();
    const callback = h.platform.approveInstall({
      authorizeUrl: await begin(h, browser),
      storeId: h.storeId,
    });
    proxy.hang();
    const t0 = performance.now();
    const res = await browser.get(callback);
    const ms = performance.now() - t0;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.text()).toContain('STORAGE_UNAVAILABLE');
    expect(ms).toBeLessThan(DEADLINE_MS + SLACK_MS);

    const w0 = performance.now();
    const hook = await deliver('msg_hung');
    expect(hook.status).toBe(503);
    expect(hook.headers.get('retry-after')).toBe('5');
    expect(((await hook.json()) as { code: string }).code).toBe('STORAGE_UNAVAILABLE');
    expect(performance.now() - w0).toBeLessThan(DEADLINE_MS + SLACK_MS);

    proxy.resume();
    let status = 0;
    for (let i = 0; i < 20 && status !== 302; i++) {
      const again = new Browser();
      const cb = await again.get(
        h.platform.approveInstall({ authorizeUrl: await begin(h, again), storeId: h.storeId }),
      );
      status = cb.status;
      if (status !== 302) await new Promise((r) => setTimeout(r, 300));
    }
    expect(status).toBe(302);
    // The platform's retry of the same delivery is processed now.
    expect((await deliver('msg_hung')).status).toBe(200);
  }, 60_000);
});

describe('background work backs off while storage fails', () => {
  const down = () => new StorageError('listing failed', { reason: 'timeout' });

  async function countFor(ms: number, calls: () => number): Promise<number> {
    const before = calls();
    await new Promise((r) => setTimeout(r, ms));
    return calls() - before;
  }

  it('the purge outbox: passes pause (doubling) instead of one every poll, and resume once storage answers', async () => {
    let calls = 0;
    let failing = true;
    const outbox = createPurgeOutbox({
      pendingPurges: {
        // A pass starts by leasing the due entries (issue 22 §5).
        async lease() {
          calls++;
          if (failing) throw down();
          return [];
        },
      } as unknown as PendingPurgeRepository,
      purge: async () => {
        throw new Error('not called');
      },
      pollMs: 20,
    });
    outbox.start();
    cleanups.push(() => outbox.close());
    // 50 polls in a second; with backoff at most ~log2(1000 / 20) + 1 passes.
    expect(await countFor(1000, () => calls)).toBeLessThanOrEqual(8);
    failing = false;
    const end = Date.now() + 5000;
    const at = calls;
    while (calls === at && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(calls).toBeGreaterThan(at);
    // Working again: a pass every poll.
    expect(await countFor(400, () => calls)).toBeGreaterThanOrEqual(8);
  });

  it('the token sweep: ticks pause (doubling) while the database fails', async () => {
    let calls = 0;
    const manager = createTokenManager({
      installations: {
        async listExpiringBefore() {
          calls++;
          throw down();
        },
      } as unknown as InstallationRepository,
      refresh: async () => {
        throw new Error('not called');
      },
      options: resolveRefreshOptions({ sweepIntervalMs: 20 }),
    });
    manager.startSweep();
    cleanups.push(() => manager.stopSweep());
    expect(await countFor(1000, () => calls)).toBeLessThanOrEqual(8);
  });
});
