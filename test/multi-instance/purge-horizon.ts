import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import {
  appBehindProxy,
  type Instance,
  type InstanceConfig,
  type LoadBalancer,
  startInstance,
  startProxy,
} from '../fixtures/instances.js';
import { Browser } from '../install/harness.js';

/** The app's database as the test reads it (`?` placeholders). */
export interface HorizonDatabase {
  url: string;
  one(query: string, params?: unknown[]): Promise<number>;
  drop(): Promise<void>;
}

// Short figures so the suite runs in seconds; the defaults are 30 s and 60 s.
const CACHE_TTL_MS = 1500;
const HORIZON_MS = 3000;

export function purgeHorizonSuite(label: string, open: () => Promise<HorizonDatabase>) {
  describe(`purge horizon: two app processes on one ${label} database`, () => {
    let db: HorizonDatabase;
    let platform: Platform;
    let proxy: LoadBalancer;
    let a: Instance;
    let b: Instance;
    let config: InstanceConfig;

    beforeAll(async () => {
      db = await open();
      platform = await startPlatform({
        logger: false,
        rateLimit: { concurrent: 500, perMinute: 100_000 },
        webhookRetrySchedule: [0.2, 0.5, 1],
      });
      proxy = await startProxy();
      config = {
        ...appBehindProxy(platform, proxy, 'Purge horizon', db.url),
        cacheTtlMs: CACHE_TTL_MS,
        purgeHorizonMs: HORIZON_MS,
      };
      a = await startInstance(config);
      b = await startInstance(config);
      // The platform's calls (install callback, webhooks) reach A only.
      proxy.setTargets([a.port]);
    }, 60_000);

    afterAll(async () => {
      await Promise.allSettled([a?.stop(), b?.stop()]);
      await proxy?.close();
      await platform?.close();
      await db?.drop();
    }, 30_000);

    const rows = (storeId: string) =>
      db.one('SELECT count(*) AS n FROM app_records WHERE store_id = ?', [storeId]);
    const kitRows = async (storeId: string) =>
      (await db.one('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', [
        storeId,
      ])) +
      (await db.one('SELECT count(*) AS n FROM store_app_sessions WHERE store_id = ?', [storeId]));

    async function install(storeId: string): Promise<void> {
      const browser = new Browser();
      const begun = await browser.get(`${proxy.url}/auth?store_id=${storeId}`);
      expect(begun.status).toBe(302);
      const cb = await browser.get(
        platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId }),
      );
      expect(cb.status).toBe(302);
    }

    async function token(instance: Instance, storeId: string): Promise<string> {
      const res = await fetch(`${instance.url}/test/session-token/${storeId}`);
      expect(res.status).toBe(200);
      return ((await res.json()) as { token: string }).token;
    }

    /** A write through authenticated(), as the template's product note: the status. */
    async function write(instance: Instance, bearer: string, n: number, delayMs = 0) {
      const res = await fetch(`${instance.url}/api/records?n=${n}&delayMs=${delayMs}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
      });
      await res.arrayBuffer();
      return res.status;
    }

    async function uninstall(storeId: string): Promise<void> {
      const { deliveryId } = platform.uninstall({ storeId, clientId: config.clientId });
      const deliveries = await platform.waitForDeliveries({ clientId: config.clientId });
      expect(deliveries.find((d) => d.id === deliveryId)?.status).toBe('succeeded');
    }

    /** Polls until `check` holds or `ms` passed; returns its last value. */
    async function within<T>(ms: number, read: () => Promise<T>, ok: (v: T) => boolean) {
      const deadline = Date.now() + ms;
      let value = await read();
      while (!ok(value) && Date.now() < deadline) {
        await sleep(100);
        value = await read();
      }
      return value;
    }

    it('a write on the other instance after the purge, and a request in flight across the purge commit, are gone after the horizon', async () => {
      const { storeId } = platform.createStore({ seed: 1 });
      await install(storeId);
      const bearer = await token(a, storeId);
      // B serves the merchant: its cache now holds the installation.
      expect(await write(b, bearer, 1)).toBe(200);
      // A slow handler on A, authenticated before the uninstall, writes after the purge commits.
      const inFlight = write(a, bearer, 2, 1200);
      await sleep(200);
      await uninstall(storeId);
      expect(await rows(storeId)).toBe(0);
      expect(await kitRows(storeId)).toBe(0);
      const purgedAt = Date.now();
      // B answers from its cache: the write lands in a store with no installation.
      const stale = await write(b, bearer, 3);
      expect(await inFlight).toBe(200);
      if (stale === 200) expect(await rows(storeId)).toBeGreaterThan(0);
      // Bounded horizon: by then nothing of the store is left, whichever instance wrote it.
      expect(
        await within(
          HORIZON_MS + 8000,
          () => rows(storeId),
          (n) => n === 0,
        ),
      ).toBe(0);
      expect(await kitRows(storeId)).toBe(0);
      expect(Date.now() - purgedAt).toBeLessThan(HORIZON_MS + 8000);
      // Past the cache TTL, B re-reads the installation: no more writes.
      expect(await write(b, bearer, 4)).toBe(401);
      expect(await rows(storeId)).toBe(0);
    }, 60_000);

    it('a reinstall inside the horizon survives the sweep, with its data', async () => {
      const { storeId } = platform.createStore({ seed: 1 });
      await install(storeId);
      expect(await write(b, await token(a, storeId), 1)).toBe(200);
      await uninstall(storeId);
      expect(await rows(storeId)).toBe(0);
      // The merchant installs again at once and works on both instances.
      await install(storeId);
      const fresh = await token(a, storeId);
      expect(await write(a, fresh, 7)).toBe(200);
      // Wait until the sweep of the uninstall has run (its outbox entry is gone).
      const sweeps = await within(
        HORIZON_MS + 8000,
        () =>
          db.one('SELECT count(*) AS n FROM store_app_pending_purges WHERE store_id = ?', [
            storeId,
          ]),
        (n) => n === 0,
      );
      expect(sweeps).toBe(0);
      expect(
        await db.one('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', [
          storeId,
        ]),
      ).toBe(1);
      expect(await rows(storeId)).toBe(1);
      expect(await write(b, await token(b, storeId), 8)).toBe(200);
      expect(await rows(storeId)).toBe(2);
    }, 60_000);
  });
}
