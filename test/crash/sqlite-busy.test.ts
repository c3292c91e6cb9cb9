/**
 * Another process holds SQLite's write lock while the app serves traffic: the
 * app waits (busy_timeout) instead of failing, and nothing is lost or doubled.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { Browser } from '../install/harness.js';
import { createCrashEnv, traffic } from './suite.js';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
}, 30_000);

describe('SQLite busy / locked', () => {
  it('another process holding the write lock for 1.5 s: the app waits, no error, nothing lost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-busy-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'app.db');
    const env = await createCrashEnv(file);
    cleanups.push(() => env.close());
    const browser = new Browser();
    const storeId = await env.install(browser);
    const t = traffic(env, storeId, browser);
    expect(await t.session()).toBe(200);

    const other = new Database(file);
    cleanups.push(async () => {
      if (other.open) other.close();
    });
    other.exec('BEGIN IMMEDIATE');
    other.prepare('INSERT INTO app_records (store_id, n) VALUES (?, ?)').run('other-store', 1);
    const release = sleep(1500).then(() => other.exec('COMMIT'));
    const statuses = await Promise.all([
      ...Array.from({ length: 4 }, () => t.write()),
      ...Array.from({ length: 4 }, () => t.webhook()),
      ...Array.from({ length: 4 }, () => t.session()),
      env.install().then(() => 302),
    ]);
    await release;
    expect(statuses.filter((s) => s !== 200 && s !== 302)).toEqual([]);
    const count = (q: string, ...p: unknown[]) => (other.prepare(q).get(...p) as { n: number }).n;
    expect(count('SELECT count(*) AS n FROM app_records WHERE store_id = ?', storeId)).toBe(40);
    for (const id of t.effects) {
      expect(count('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = ?', id)).toBe(1);
    }
    expect(t.effects).toHaveLength(4);
    expect(env.instance().child.exitCode).toBeNull();
  }, 60_000);
});
