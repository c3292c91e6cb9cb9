/**
 * Three app processes (the built package) on ONE database server (Postgres,
 * MariaDB) behind a round-robin proxy, with the local platform in this
 * process. The only difference from a single-instance app is DATABASE_URL.
 * Run `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
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
import type { ServerDatabase, ServerKind } from '../helpers/databases.js';
import { Browser } from '../install/harness.js';

const N = 3;

export function multiInstanceSuite(kind: ServerKind) {
  let db: ServerDatabase;
  let platform: Platform;
  let proxy: LoadBalancer;
  let instances: Instance[] = [];
  let config: InstanceConfig;
  let storeId: string;
  /** How far the cases moved the platform's clock: it signs deliveries in it. */
  let platformAheadSeconds = 0;
  const browser = new Browser();

  beforeAll(async () => {
    db = await kind.create('sak_multi');
    platform = await startPlatform({
      logger: false,
      rateLimit: { concurrent: 500, perMinute: 100_000 },
      webhookRetrySchedule: [0.2, 0.5, 1],
    });
    proxy = await startProxy();
    storeId = platform.createStore({ name: 'Shared store', seed: 3 }).storeId;
    config = {
      ...appBehindProxy(platform, proxy, 'Multi-instance', db.url),
      effectDelayMs: 100,
    };
    // All three start at once, as after a deploy: migrations take an advisory lock.
    instances = await Promise.all(Array.from({ length: N }, () => startInstance(config)));
    proxy.setTargets(instances.map((i) => i.port));
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled(instances.map((i) => i.stop()));
    await proxy?.close();
    await platform?.close();
    await db?.drop();
  }, 30_000);

  const count = (query: string, params: unknown[] = []) => db.one(query, params);

  async function getJson(url: string, headers: Record<string, string> = {}) {
    const res = await browser.get(url, { accept: 'application/json', ...headers });
    return { status: res.status, body: (await res.json().catch(() => null)) as { code?: string } };
  }

  /** A page load as a browser sends it (fetch always says `Sec-Fetch-Mode: cors`). */
  function navigate(url: string, cookie: string): Promise<{ status: number; location?: string }> {
    return new Promise((resolve, reject) => {
      http
        .get(
          url,
          { headers: { cookie, 'sec-fetch-mode': 'navigate', accept: 'text/html' } },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, location: res.headers.location });
          },
        )
        .on('error', reject);
    });
  }

  describe(`N = 3 app instances on one ${kind.label} database`, () => {
    it('an install begun on instance A completes on instance B', async () => {
      const [a, b, c] = instances as [Instance, Instance, Instance];
      const begun = await browser.get(`${a.url}/auth?store_id=${storeId}`);
      expect(begun.status).toBe(302);
      const callback = new URL(
        platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId }),
      );
      // The platform redirects to the public URL; the load balancer picks B.
      expect(callback.origin).toBe(proxy.url);
      const done = await browser.get(`${b.url}${callback.pathname}${callback.search}`);
      expect(done.status).toBe(302);
      expect(done.headers.get('location')).toContain(`/admin/stores/${storeId}/apps/`);
      expect(
        await count('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', [
          storeId,
        ]),
      ).toBe(1);
      // The session is server-side too: C knows the merchant.
      const onC = await getJson(`${c.url}/api/first-product`);
      expect(onC.status).toBe(200);
      expect(onC.body).toMatchObject({ storeId });
    });

    it('after expiry, 150 requests over all instances make exactly one refresh call', async () => {
      // Warm every instance (each caches the installation and its token).
      for (const i of instances)
        expect((await getJson(`${i.url}/api/first-product`)).status).toBe(200);
      platform.advanceClock(86_400 + 60);
      platformAheadSeconds += 86_400 + 60;
      const before = platform.stats().tokenRequests.refresh_token;
      const cookie = [...browser.cookies].map(([k, v]) => `${k}=${v.value}`).join('; ');
      const statuses = await Promise.all(
        Array.from({ length: 150 }, async () => {
          const res = await fetch(`${proxy.url}/api/first-product`, {
            headers: { cookie, accept: 'application/json' },
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      expect(platform.stats().tokenRequests.refresh_token - before).toBe(1);
      // Pooling: the instances together never hold more than N × storage.pool.max connections.
      const connections = await db.connections();
      expect(connections).toBeGreaterThan(0);
      expect(connections).toBeLessThanOrEqual(N * config.poolMax!);
    }, 30_000);

    it('one webhook delivery POSTed to two instances at the same time runs once', async () => {
      const [a, b] = instances as [Instance, Instance];
      for (let round = 0; round < 5; round++) {
        const id = `msg_${randomBytes(8).toString('hex')}`;
        // Signed as the platform signs: in its clock (moved ahead by the refresh case).
        const ts = Math.floor(Date.now() / 1000) + platformAheadSeconds;
        const body = JSON.stringify({ type: 'test.effect', data: { store_id: storeId, round } });
        const headers = {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signWebhook(config.webhookSecret, id, ts, body),
        };
        const answers = await Promise.all(
          [a, b].map(async (i) => {
            const res = await fetch(`${i.url}/webhooks`, { method: 'POST', headers, body });
            return { status: res.status, body: (await res.json()) as { status: string } };
          }),
        );
        expect(answers.map((x) => x.status)).toEqual([200, 200]);
        expect(answers.map((x) => x.body.status).sort()).toEqual(['duplicate', 'processed']);
        expect(
          await count('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = ?', [id]),
        ).toBe(1);
      }
    }, 30_000);

    it('a purge on one instance (the uninstall webhook) is seen by all', async () => {
      const { token } = (await (
        await fetch(`${instances[0]!.url}/test/session-token/${storeId}`)
      ).json()) as { token: string };
      await fetch(`${instances[0]!.url}/test/seed/${storeId}?rows=50`, { method: 'POST' });
      for (const i of instances) {
        expect((await getJson(`${i.url}/api/first-product`)).status).toBe(200);
      }
      const { deliveryId } = platform.uninstall({ storeId, clientId: config.clientId });
      const [delivery] = await platform.waitForDeliveries({ clientId: config.clientId });
      expect(delivery).toMatchObject({ id: deliveryId, status: 'succeeded' });
      // Exactly one instance ran it; the others' caches still hold the installation.
      expect(
        await count('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = ?', [deliveryId]),
      ).toBe(1);
      for (const table of ['store_app_installations', 'store_app_sessions', 'app_records']) {
        expect(
          await count(`SELECT count(*) AS n FROM ${table} WHERE store_id = ?`, [storeId]),
        ).toBe(0);
      }
      const cookie = [...browser.cookies].map(([k, v]) => `${k}=${v.value}`).join('; ');
      for (const i of instances) {
        // The cookie session is gone on every instance: a page load goes to the install.
        const page = await navigate(`${i.url}/api/first-product`, cookie);
        expect(page.status).toBe(302);
        expect(page.location?.startsWith(`${proxy.url}/auth`)).toBe(true);
        // A session token minted before the uninstall is refused on every instance.
        const res = await fetch(`${i.url}/api/first-product`, {
          headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        });
        expect(res.status).toBe(401);
        expect(((await res.json()) as { code: string }).code).toMatch(
          /^(NOT_INSTALLED|token_revoked)$/,
        );
      }
    }, 30_000);
  });
}
