/**
 * A SQLite write lock held by another process for longer than busy_timeout
 * (5 s): the waiting requests get a clear "try again", never a crash, and the
 * app works again as soon as the lock is gone. Long: it holds the lock 6 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Browser } from '../install/harness.js';
import { createCrashEnv, traffic } from './suite.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
}, 30_000);

describe('SQLite locked past busy_timeout', () => {
  it('writes answer 503 (a webhook 500, retried by the platform), never a crash, then everything works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-busy-long-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'app.db');
    const env = await createCrashEnv(file);
    cleanups.push(() => env.close());
    const browser = new Browser();
    const storeId = await env.install(browser);
    const t = traffic(env, storeId, browser);

    const other = new Database(file);
    cleanups.push(async () => {
      if (other.open) other.close();
    });
    other.exec('BEGIN IMMEDIATE');
    other.prepare('INSERT INTO app_records (store_id, n) VALUES (?, ?)').run('other-store', 1);
    const timer = setTimeout(() => other.exec('COMMIT'), 6_500);
    cleanups.push(async () => clearTimeout(timer));
    const [write, webhook, session] = await Promise.all([t.write(), t.webhook(), t.session()]);
    expect(write).toBe(503);
    // The webhook queues behind the failed write on the kit's SQLite queue, so it may still get the lock.
    expect([200, 500, 503]).toContain(webhook);
    expect(session).toBe(200);
    await new Promise((r) => setTimeout(r, 6_700 - 5_000));
    expect(env.instance().child.exitCode).toBeNull();
    expect([await t.write(), await t.webhook(), await t.session()]).toEqual([200, 200, 200]);
  }, 60_000);
});
