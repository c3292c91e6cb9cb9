/**
 * kill -9 of an app process at seeded random points during install, refresh
 * and purge, then a restart on the same database. After every run: no
 * installation lost or left unusable, no purge half done, no side effect run
 * twice. `CRASH_RUNS` sets the kills per operation (default 5; 50 under
 * `npm run test:long`). App processes run the built package: `npm run build` first.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { type Platform, signWebhook, startPlatform } from '../../src/platform/index.js';
import {
  type Instance,
  type InstanceConfig,
  type LoadBalancer,
  seeded,
  startInstance,
  startProxy,
} from '../fixtures/instances.js';
import type { ServerKind } from '../helpers/databases.js';
import { Browser } from '../install/harness.js';

export const CRASH_RUNS = Math.max(1, Number(process.env['CRASH_RUNS'] ?? 5) || 5);

/** Direct reads of the app's database from the test process. */
export interface Reader {
  count(table: string, storeId: string): Promise<number>;
  effects(webhookId: string): Promise<number>;
  /** The installation's `version` (moves on every committed refresh), or 0. */
  version(storeId: string): Promise<number>;
  close(): Promise<void>;
}

export interface CrashEnv {
  platform: Platform;
  proxy: LoadBalancer;
  config: InstanceConfig;
  instance(): Instance;
  /** Starts a fresh process on the same database and points the proxy at it. */
  restart(): Promise<void>;
  /** Installs a new store through the proxy; `browser` keeps the session cookie. */
  install(browser?: Browser): Promise<string>;
  /** One API call through authenticated() with an app session token: the status. */
  apiStatus(storeId: string): Promise<number>;
}

export async function createCrashEnv(
  databaseUrl: string,
): Promise<CrashEnv & { close(): Promise<void> }> {
  const platform = await startPlatform({
    logger: false,
    rateLimit: { concurrent: 500, perMinute: 100_000 },
    // Long enough to outlast a restart on a loaded machine, short enough for a fast suite.
    webhookRetrySchedule: [0.2, 0.5, 1, 1, 2, 2, 3, 5],
  });
  const proxy = await startProxy();
  const creds = platform.registerApp({
    name: 'Crash test',
    redirectUri: `${proxy.url}/auth/callback`,
    webhookUrl: `${proxy.url}/webhooks`,
    scopes: ['read_products'],
    appUrl: proxy.url,
  });
  const config: InstanceConfig = {
    databaseUrl,
    encryptionKey: generateKey(),
    sessionSecret: randomBytes(32).toString('base64url'),
    clientId: creds.clientId,
    clientSecret: creds.clientSecret,
    webhookSecret: creds.webhookSecret,
    authUrl: platform.authUrl,
    appUrl: proxy.url,
    poolMax: 4,
    // A lease left by a killed process expires quickly, so the next call need not wait 30 s.
    leaseMs: 1000,
  };
  let current = await startInstance(config);
  proxy.setTargets([current.port]);

  const env: CrashEnv & { close(): Promise<void> } = {
    platform,
    proxy,
    config,
    instance: () => current,
    async restart() {
      await current.kill();
      current = await startInstance(config);
      proxy.setTargets([current.port]);
    },
    async install(browser = new Browser()) {
      const { storeId } = platform.createStore({ seed: 1 });
      const begun = await browser.get(`${proxy.url}/auth?store_id=${storeId}`);
      if (begun.status !== 302) throw new Error(`begin answered ${begun.status}`);
      const cb = await browser.get(
        platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId }),
      );
      if (cb.status !== 302) throw new Error(`callback answered ${cb.status}`);
      return storeId;
    },
    async apiStatus(storeId) {
      const t = await fetch(`${proxy.url}/test/session-token/${storeId}`);
      const { token } = (await t.json()) as { token: string };
      const res = await fetch(`${proxy.url}/api/first-product`, {
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      });
      await res.arrayBuffer();
      return res.status;
    },
    async close() {
      await current.stop();
      await proxy.close();
      await platform.close();
    },
  };
  return env;
}

/**
 * Runs `op` and kills the process `delayMs` after `anchor` (an event of the
 * operation: its request reaching the app, or the platform answering the token
 * call), so kill points spread over the operation however loaded the machine is.
 */
async function killDuring(
  env: CrashEnv,
  anchor: Promise<void>,
  delayMs: number,
  op: () => Promise<unknown>,
) {
  const running = op().catch(() => undefined);
  await Promise.race([anchor, sleep(10_000)]);
  if (delayMs > 0) await sleep(delayMs);
  await env.instance().kill();
  await running;
}

/** Resolves once the platform has handled one more token request of `grant`. */
async function tokenCall(platform: Platform, grant: 'authorization_code' | 'refresh_token') {
  const start = platform.stats().tokenRequests[grant];
  const deadline = Date.now() + 10_000;
  while (platform.stats().tokenRequests[grant] === start && Date.now() < deadline) await sleep(1);
}

async function waitForDelivery(platform: Platform, id: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = platform.deliveries().find((x) => x.id === id);
    if (d && d.status !== 'pending') return d.status;
    if (Date.now() > deadline) return d?.status ?? 'missing';
    await sleep(50);
  }
}

export function crashSuite(
  name: string,
  open: () => Promise<{ url: string; reader: Reader; drop(): Promise<void> }>,
) {
  describe(`kill -9 during install, refresh and purge (${name})`, () => {
    let env: CrashEnv & { close(): Promise<void> };
    let reader: Reader;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      const db = await open();
      reader = db.reader;
      drop = db.drop;
      env = await createCrashEnv(db.url);
    }, 60_000);

    afterAll(async () => {
      await env?.close().catch(() => undefined);
      await reader?.close().catch(() => undefined);
      await drop?.();
    }, 30_000);

    it(
      `install: ${CRASH_RUNS} kills mid-callback, then every store is installed and usable`,
      async () => {
        const random = seeded(101);
        const outcomes = { committed: 0, lost: 0 };
        for (let run = 0; run < CRASH_RUNS; run++) {
          const { storeId } = env.platform.createStore({ seed: 1 });
          const browser = new Browser();
          const begun = await browser.get(`${env.proxy.url}/auth?store_id=${storeId}`);
          expect(begun.status).toBe(302);
          const callback = env.platform.approveInstall({
            authorizeUrl: begun.headers.get('location')!,
            storeId,
          });
          // Latency on the token endpoint makes the kill land inside the exchange as often as not.
          env.platform.setFaults({ seed: run + 1, token: { latencyMs: 10, jitterMs: 40 } });
          // A third of the kills count from the callback's arrival, the rest from the
          // platform's answer to the code exchange (the response may never be stored).
          const early = random() < 0.34;
          const anchor = early
            ? env.proxy.nextRequest('/auth/callback')
            : tokenCall(env.platform, 'authorization_code');
          await killDuring(env, anchor, Math.floor(random() * (early ? 30 : 25)), () =>
            browser.get(callback),
          );
          env.platform.setFaults({});
          const rows = await reader.count('store_app_installations', storeId);
          expect(rows).toBeLessThanOrEqual(1);
          await env.restart();
          if (rows === 1) {
            outcomes.committed++;
          } else {
            // Nothing was stored: the merchant installs again and that works.
            outcomes.lost++;
            const again = await browser.get(`${env.proxy.url}/auth?store_id=${storeId}`);
            expect(again.status).toBe(302);
            const cb = await browser.get(
              env.platform.approveInstall({
                authorizeUrl: again.headers.get('location')!,
                storeId,
              }),
            );
            expect(cb.status).toBe(302);
          }
          expect(await reader.count('store_app_installations', storeId)).toBe(1);
          expect(await env.apiStatus(storeId)).toBe(200);
        }
        expect(outcomes.committed + outcomes.lost).toBe(CRASH_RUNS);
        console.log(`crash install (${name}): ${JSON.stringify(outcomes)}`);
      },
      30_000 + CRASH_RUNS * 8_000,
    );

    it(
      `refresh: ${CRASH_RUNS} kills mid-refresh, then the next API call works (grace period)`,
      async () => {
        const random = seeded(202);
        const storeId = await env.install();
        const outcomes = { notStarted: 0, committed: 0, responseLost: 0 };
        for (let run = 0; run < CRASH_RUNS; run++) {
          const version = await reader.version(storeId);
          const calls = env.platform.stats().tokenRequests.refresh_token;
          // The platform now says token_expired: the next calls refresh.
          env.platform.advanceClock(86_400 + 60);
          env.platform.setFaults({ seed: run + 1, token: { latencyMs: 10, jitterMs: 40 } });
          const t = await fetch(`${env.proxy.url}/test/session-token/${storeId}`);
          const { token } = (await t.json()) as { token: string };
          const early = random() < 0.2;
          const anchor = early
            ? env.proxy.nextRequest('/api/first-product')
            : tokenCall(env.platform, 'refresh_token');
          await killDuring(env, anchor, Math.floor(random() * (early ? 30 : 20)), () =>
            Promise.all(
              Array.from({ length: 5 }, () =>
                fetch(`${env.proxy.url}/api/first-product`, {
                  headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
                }).then((r) => r.arrayBuffer()),
              ),
            ),
          );
          env.platform.setFaults({});
          const sent = env.platform.stats().tokenRequests.refresh_token - calls;
          const moved = (await reader.version(storeId)) > version;
          if (moved) outcomes.committed++;
          else if (sent > 0) outcomes.responseLost++;
          else outcomes.notStarted++;
          await env.restart();
          expect(await env.apiStatus(storeId)).toBe(200);
          expect(await reader.version(storeId)).toBeGreaterThan(version);
        }
        expect(await reader.count('store_app_installations', storeId)).toBe(1);
        console.log(`crash refresh (${name}): ${JSON.stringify(outcomes)}`);
      },
      30_000 + CRASH_RUNS * 8_000,
    );

    it(
      `purge: ${CRASH_RUNS} kills mid-uninstall, never half done, the handler's effect once`,
      async () => {
        const random = seeded(303);
        const ROWS = 2000;
        const outcomes = { before: 0, after: 0 };
        for (let run = 0; run < CRASH_RUNS; run++) {
          const storeId = await env.install();
          const seeded = await fetch(`${env.proxy.url}/test/seed/${storeId}?rows=${ROWS}`, {
            method: 'POST',
          });
          expect(seeded.status).toBe(200);
          let deliveryId = '';
          await killDuring(
            env,
            env.proxy.nextRequest('/webhooks'),
            Math.floor(random() * 40),
            async () => {
              deliveryId = env.platform.uninstall({
                storeId,
                clientId: env.config.clientId,
              }).deliveryId;
            },
          );
          // At the instant of the crash: everything or nothing.
          const state = {
            installation: await reader.count('store_app_installations', storeId),
            records: await reader.count('app_records', storeId),
            sessions: await reader.count('store_app_sessions', storeId),
          };
          expect([
            { installation: 1, records: ROWS },
            { installation: 0, records: 0, sessions: 0 },
          ]).toContainEqual(
            state.installation === 1 ? { installation: 1, records: state.records } : state,
          );
          if (state.installation === 1) outcomes.before++;
          else outcomes.after++;
          // The platform retries the delivery; the restarted process finishes the job.
          await env.restart();
          expect(await waitForDelivery(env.platform, deliveryId)).toBe('succeeded');
          expect(await reader.count('store_app_installations', storeId)).toBe(0);
          expect(await reader.count('app_records', storeId)).toBe(0);
          expect(await reader.count('store_app_sessions', storeId)).toBe(0);
          expect(await reader.effects(deliveryId)).toBe(1);
        }
        console.log(`crash purge (${name}): ${JSON.stringify(outcomes)}`);
      },
      30_000 + CRASH_RUNS * 10_000,
    );
  });
}

/** The three kinds of request that touch the database: a session read, a write, a webhook. */
export function traffic(env: CrashEnv, storeId: string, browser: Browser) {
  const cookie = [...browser.cookies].map(([k, v]) => `${k}=${v.value}`).join('; ');
  const effects: string[] = [];
  return {
    effects,
    async session() {
      const res = await fetch(`${env.proxy.url}/api/first-product`, {
        headers: { cookie, accept: 'application/json' },
      });
      await res.arrayBuffer();
      return res.status;
    },
    async write() {
      const res = await fetch(`${env.proxy.url}/test/seed/${storeId}?rows=10`, { method: 'POST' });
      await res.arrayBuffer();
      return res.status;
    },
    async webhook() {
      const id = `msg_${randomBytes(8).toString('hex')}`;
      const ts = Math.floor(Date.now() / 1000);
      const body = JSON.stringify({ type: 'test.effect', data: { store_id: storeId } });
      const res = await fetch(`${env.proxy.url}/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(ts),
          'webhook-signature': signWebhook(env.config.webhookSecret, id, ts, body),
        },
        body,
      });
      await res.arrayBuffer();
      if (res.status === 200) effects.push(id);
      return res.status;
    },
  };
}

/** A database on a server (Postgres, MariaDB) and its Reader. */
export async function serverReader(kind: ServerKind, prefix: string) {
  const db = await kind.create(prefix);
  return {
    url: db.url,
    reader: {
      count: (table: string, storeId: string) =>
        db.one(`SELECT count(*) AS n FROM ${table} WHERE store_id = ?`, [storeId]),
      effects: (webhookId: string) =>
        db.one('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = ?', [webhookId]),
      async version(storeId: string) {
        const rows = await db.rows<{ version: number }>(
          'SELECT version FROM store_app_installations WHERE store_id = ?',
          [storeId],
        );
        return rows[0]?.version ?? 0;
      },
      // The probe connection closes with drop().
      close: async () => undefined,
    } satisfies Reader,
    drop: () => db.drop(),
  };
}
