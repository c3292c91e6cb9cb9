/**
 * "Postgres restart" mid-run, simulated safely: every backend of the app's
 * own temporary database is terminated (never the shared server). The app
 * answers a clear 503 meanwhile, never crashes, and serves again by itself.
 *
 * The kit listens for errors on every pooled client, including one checked
 * out for a transaction, so a connection killed between two statements of a
 * transaction fails that statement (503) instead of crashing the process.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTempDatabase } from '../helpers/postgres.js';
import { Browser } from '../install/harness.js';
import { createCrashEnv, traffic } from './suite.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
}, 30_000);

describe('Postgres restart (every backend of the app terminated)', () => {
  it('mid-run: no 500, the process survives, and it serves again without help', async () => {
    const db = await createTempDatabase('sak_pgkill');
    cleanups.push(() => db.drop());
    const env = await createCrashEnv(db.url);
    cleanups.push(() => env.close());
    const browser = new Browser();
    const storeId = await env.install(browser);
    const t = traffic(env, storeId, browser);
    expect(await t.session()).toBe(200);

    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    cleanups.push(() => admin.end());
    const terminate = async () => {
      const { rowCount } = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [db.name],
      );
      return rowCount ?? 0;
    };

    const statuses: Array<{ op: string; status: number }> = [];
    let running = true;
    const loops = Array.from({ length: 3 }, async (_, k) => {
      const child = env.instance().child;
      while (running && child.exitCode === null && child.signalCode === null) {
        const op = (['session', 'write', 'webhook'] as const)[k]!;
        statuses.push({ op, status: await t[op]() });
      }
    });
    await sleep(300);
    expect(await terminate()).toBeGreaterThan(0);
    await sleep(300);
    await terminate();
    await sleep(300);
    running = false;
    await Promise.all(loops);

    // The process survived (an error event on a pooled client must not kill it).
    expect(env.instance().child.exitCode).toBeNull();
    // Only 200s or a clear "try again" (503) while connections were dropped; the
    // webhook receiver's documented failure answer is 500 (the platform retries it).
    expect(
      statuses.filter(
        ({ op, status }) =>
          status !== 200 && status !== 503 && !(op === 'webhook' && status === 500),
      ),
    ).toEqual([]);
    // Recovered: every kind of request works again (pool replaced the dead connections).
    const after: number[] = [];
    for (let i = 0; i < 3; i++) after.push(await t.session(), await t.write(), await t.webhook());
    expect(after).toEqual(Array(9).fill(200));
    const { rows } = await admin.query<{ id: string; n: string }>(
      'SELECT webhook_id AS id, count(*) AS n FROM webhook_effects GROUP BY webhook_id HAVING count(*) > 1',
    );
    expect(rows).toEqual([]);
  }, 60_000);
});
