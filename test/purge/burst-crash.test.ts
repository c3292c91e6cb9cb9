/**
 * Issue 22 §5: during a burst, deliveries that find every purge slot taken
 * are acknowledged once their purge is recorded, before it runs. A kill -9
 * then leaves acknowledged uninstalls unpurged, which the platform never
 * sends again: the restarted process's outbox must purge every one of them.
 * Kit processes are the built package (`npm run build` first) on the real
 * Postgres and MariaDB.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createCrashEnv } from '../crash/suite.js';
import { SERVERS } from '../helpers/databases.js';

const STORES = 8;
const ROWS = 50;

describe.each(SERVERS)('kill -9 after a burst of uninstalls was acknowledged ($label)', (kind) => {
  it('the restarted outbox purges every acknowledged uninstall; the platform sends none again', async () => {
    const db = await kind.create('sak_burst_crash');
    const env = await createCrashEnv(db.url);
    try {
      // Each purge takes 1 s (a slow onPurge); with poolMax 4, 2 run at a
      // time, so most of the burst is acknowledged while still queued.
      env.config.purgeDelayMs = 1000;
      await env.restart();
      const stores: string[] = [];
      for (let i = 0; i < STORES; i++) {
        const storeId = await env.install();
        const seeded = await fetch(`${env.proxy.url}/test/seed/${storeId}?rows=${ROWS}`, {
          method: 'POST',
        });
        expect(seeded.status).toBe(200);
        stores.push(storeId);
      }
      for (const storeId of stores) {
        env.platform.uninstall({ storeId, clientId: env.config.clientId });
      }
      const deliveries = await env.platform.waitForDeliveries({
        clientId: env.config.clientId,
        count: STORES,
        timeoutMs: 30_000,
      });
      expect(deliveries.every((d) => d.status === 'succeeded')).toBe(true);
      await env.instance().kill();
      const left = async () => {
        let n = 0;
        for (const storeId of stores)
          n += await db.one('SELECT count(*) AS n FROM app_records WHERE store_id = ?', [storeId]);
        return n;
      };
      // The kill landed between acknowledgements and purges (else this test proves nothing).
      expect(await left()).toBeGreaterThan(0);

      env.config.purgeDelayMs = 0;
      await env.restart();
      const pending = () =>
        db.one("SELECT count(*) AS n FROM store_app_pending_purges WHERE kind = 'purge'");
      const deadline = Date.now() + 30_000;
      while (((await left()) > 0 || (await pending()) > 0) && Date.now() < deadline) {
        await sleep(100);
      }
      expect(await left()).toBe(0);
      expect(await pending()).toBe(0);
      for (const storeId of stores) {
        expect(
          await db.one('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', [
            storeId,
          ]),
        ).toBe(0);
      }
      // Acknowledged once each: the recovery came from the outbox, not from a redelivery.
      const after = env.platform.deliveries({ clientId: env.config.clientId });
      expect(
        after.filter((d) => d.topic === 'app.uninstalled').map((d) => d.attempts.length),
      ).toEqual(Array(STORES).fill(1));
    } finally {
      await env.close();
      await db.drop();
    }
  }, 120_000);
});
