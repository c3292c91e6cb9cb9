/**
 * Three app processes on one database whose host clocks disagree: one right,
 * one 5 minutes ahead, one 5 minutes behind (`clockSkewMs`: the process's
 * `Date` runs off, as a host clock without NTP would). Leases, due times,
 * outbox schedules and the purge horizon are decided in the database's clock,
 * platform timestamps in the platform's (from its `Date` headers), so the
 * skew changes nothing. Run `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, signWebhook, startPlatform } from '../../src/platform/index.js';
import {
  appBehindProxy,
  type Instance,
  type InstanceConfig,
  type LoadBalancer,
  startInstance,
  startProxy,
} from '../fixtures/instances.js';
import { Browser } from '../install/harness.js';

const SKEW_MS = 5 * 60_000;
const SKEWS = [0, SKEW_MS, -SKEW_MS] as const;
/** Stores installed per instance. */
const PER_INSTANCE = 6;
const HORIZON_MS = 15_000;
const DAY_MS = 86_400_000;

/** The database the instances share, read from the test process. */
export interface SkewDatabase {
  url: string;
  /** The store's access-token expiry as stored (epoch ms), or undefined. */
  expiry(storeId: string): Promise<number | undefined>;
  /** Kinds of the store's purge outbox rows. */
  outbox(storeId: string): Promise<string[]>;
  close(): Promise<void>;
}

export function clockSkewSuite(label: string, open: () => Promise<SkewDatabase>) {
  describe(`instances whose clocks are 5 minutes apart, on one ${label} database`, () => {
    let db: SkewDatabase;
    let platform: Platform;
    let proxy: LoadBalancer;
    let instances: Instance[] = [];
    let config: InstanceConfig;
    /** Seconds the test moved the platform's clock. */
    let advanced = 0;
    const platformNow = () => Date.now() + advanced * 1000;
    const stores: Array<{ storeId: string; on: number }> = [];

    beforeAll(async () => {
      db = await open();
      platform = await startPlatform({
        logger: false,
        rateLimit: { concurrent: 500, perMinute: 100_000 },
        webhookRetrySchedule: [0.2, 0.5, 1, 2],
      });
      proxy = await startProxy();
      config = {
        ...appBehindProxy(platform, proxy, 'Clock skew', db.url),
        purgeHorizonMs: HORIZON_MS,
      };
      // One first (it migrates), then the other two.
      instances = [await startInstance({ ...config, clockSkewMs: SKEWS[0] })];
      for (const skew of SKEWS.slice(1)) {
        instances.push(await startInstance({ ...config, clockSkewMs: skew }));
      }
      proxy.setTargets(instances.map((i) => i.port));
    }, 60_000);

    afterAll(async () => {
      await Promise.allSettled(instances.map((i) => i.stop()));
      await proxy?.close();
      await platform?.close();
      await db?.close();
    }, 30_000);

    it('0 webhooks refused for time: each instance checks timestamps in the platform clock', async () => {
      // First thing these instances do: none has heard the platform's clock yet.
      const statuses: number[] = [];
      for (const [n, instance] of instances.entries()) {
        for (let k = 0; k < 10; k++) {
          // Sent now, or queued up to a minute at the platform: well within the 300 s tolerance.
          const ts = Math.floor(platformNow() / 1000) - k * 6;
          const id = `msg_skew_${n}_${k}_${randomBytes(4).toString('hex')}`;
          const body = JSON.stringify({ type: 'test.effect', data: { store_id: null } });
          const res = await fetch(`${instance.url}/webhooks`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': id,
              'webhook-timestamp': String(ts),
              'webhook-signature': signWebhook(config.webhookSecret, id, ts, body),
            },
            body,
          });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
      }
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
    });

    it('expiries stored right: counted from the platform issuing the token, in its clock', async () => {
      const wrong: Array<{ on: number; offBySeconds: number }> = [];
      for (const [on, instance] of instances.entries()) {
        for (let k = 0; k < PER_INSTANCE; k++) {
          const { storeId } = platform.createStore({ seed: 1 });
          const browser = new Browser();
          const before = platformNow();
          const begun = await browser.get(`${instance.url}/auth?store_id=${storeId}`);
          expect(begun.status).toBe(302);
          const callback = new URL(
            platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId }),
          );
          const done = await browser.get(`${instance.url}${callback.pathname}${callback.search}`);
          expect(done.status).toBe(302);
          const after = platformNow();
          stores.push({ storeId, on });
          const stored = (await db.expiry(storeId)) ?? 0;
          // The platform's Date has whole seconds: up to 1 s early, never late.
          if (stored < before + DAY_MS - 1000 || stored > after + DAY_MS) {
            wrong.push({ on, offBySeconds: Math.round((stored - (before + DAY_MS)) / 1000) });
          }
        }
      }
      expect(wrong).toEqual([]);
    }, 60_000);

    it('0 tokens refreshed twice: every instance asks for every token at once, one refresh each', async () => {
      expect(stores).toHaveLength(SKEWS.length * PER_INSTANCE);
      // Every token expired at the platform; a slow token endpoint keeps each lease held a while.
      platform.advanceClock(86_400 + 60);
      advanced += 86_400 + 60;
      platform.setFaults({ seed: 7, token: { latencyMs: 400, jitterMs: 200 } });
      const before = platform.stats().tokenRequests.refresh_token;
      try {
        const statuses = await Promise.all(
          stores.flatMap(({ storeId }) =>
            instances.map(async (instance) => {
              const t = await fetch(`${instance.url}/test/session-token/${storeId}`);
              const { token } = (await t.json()) as { token: string };
              const res = await fetch(`${instance.url}/api/first-product`, {
                headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
              });
              await res.arrayBuffer();
              return res.status;
            }),
          ),
        );
        expect(statuses.filter((s) => s !== 200)).toEqual([]);
      } finally {
        platform.setFaults({});
      }
      expect(platform.stats().tokenRequests.refresh_token - before).toBe(stores.length);
      // And the refreshed expiries are the platform's too.
      for (const { storeId } of stores) {
        const stored = (await db.expiry(storeId)) ?? 0;
        expect(Math.abs(stored - (platformNow() + DAY_MS))).toBeLessThan(30_000);
      }
    }, 60_000);

    it('0 sweeps run early: each purge-horizon sweep waits its horizon whoever polls', async () => {
      const uninstalled = stores.slice(0, 9).map((s) => s.storeId);
      expect(uninstalled).toHaveLength(9);
      const deliveries = uninstalled.map(
        (storeId) => platform.uninstall({ storeId, clientId: config.clientId }).deliveryId,
      );
      // Every purge done: each store's outbox row is its sweep.
      const deadline = Date.now() + 30_000;
      const kinds = async () => Promise.all(uninstalled.map((s) => db.outbox(s)));
      while (Date.now() < deadline) {
        const done = platform.deliveries().filter((d) => deliveries.includes(d.id));
        if (
          done.every((d) => d.status === 'succeeded') &&
          (await kinds()).every((k) => k.length === 1 && k[0] === 'sweep')
        ) {
          break;
        }
        await sleep(100);
      }
      const settled = Date.now();
      expect(await kinds()).toEqual(uninstalled.map(() => ['sweep']));
      // Well inside the horizon, with every instance's outbox polling (every 2 s): none ran.
      await sleep(HORIZON_MS / 2);
      expect(Date.now() - settled).toBeLessThan(HORIZON_MS - 2_000);
      expect(await kinds()).toEqual(uninstalled.map(() => ['sweep']));
      // After it, they all run.
      const end = Date.now() + HORIZON_MS + 15_000;
      while (Date.now() < end && (await kinds()).some((k) => k.length > 0)) await sleep(250);
      expect(await kinds()).toEqual(uninstalled.map(() => []));
    }, 90_000);
  });
}
