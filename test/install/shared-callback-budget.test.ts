/**
 * The install callback's budget of callers without a client address (`kit.fetch`
 * without `remoteAddress`: the Next.js example, a Hono app behind a proxy): it
 * counts failed exchanges and refusals only, and never refuses for its count, so a
 * stranger's junk callbacks cannot keep a merchant with a valid code from
 * installing. The kit says, once, why such callbacks share a budget and how to
 * give them addresses. Real sockets (Hono on Node) against the local platform.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { Browser } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-shared-budget-'));

describe('install callbacks without a client address', () => {
  let platform: Platform;
  let kit: StoreAppKit;
  let server: Server;
  let appUrl: string;
  const logs: Array<{ msg?: string; setting?: string; event?: string }> = [];

  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
    const app = new Hono();
    // As the docs' Next.js example: kit.fetch without remoteAddress.
    app.use('*', async (c, next) => (await kit.fetch(c.req.raw)) ?? next());
    server = createAdaptorServer({ fetch: app.fetch }) as Server;
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const creds = platform.registerApp({
      name: 'Shared budget',
      redirectUri: `${appUrl}/auth/callback`,
      webhookUrl: `${appUrl}/webhooks`,
      scopes: ['read_products'],
      appUrl,
    });
    const destination = new Writable({
      write(chunk, _enc, cb) {
        logs.push(JSON.parse(String(chunk)));
        cb();
      },
    });
    kit = (await storeApp({
      appUrl,
      environment: 'test',
      oauth: {
        clientId: creds.clientId,
        clientSecret: creds.clientSecret,
        scopes: ['read_products'],
        authUrl: platform.authUrl,
      },
      storage: { databaseUrl: join(dir, 'app.db'), encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: creds.webhookSecret },
      logger: { instance: pino({ level: 'warn' }, destination) },
    })) as StoreAppKit;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    await kit?.close();
    await platform?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A stranger's pair: begin an install, then call the callback with a made-up code. */
  async function junkPair(storeId: string, n: number): Promise<number> {
    const browser = new Browser();
    const begun = await browser.get(`${appUrl}/auth?store_id=${storeId}`);
    expect(begun.status).toBe(302);
    const state = new URL(begun.headers.get('location')!).searchParams.get('state')!;
    const callback = new URL(`${appUrl}/auth/callback`);
    callback.searchParams.set('state', state);
    callback.searchParams.set('code', `junk${n}`);
    callback.searchParams.set('store_id', storeId);
    return (await browser.get(callback.toString())).status;
  }

  it('25 junk callback pairs in a minute spend the budget, and a merchant with a valid code still installs', async () => {
    const victim = platform.createStore({ name: 'Victim' }).storeId;
    const exchangesBefore = platform.stats().tokenRequests.authorization_code;
    // More than the default budget (20 a minute), each a failed exchange.
    const junk: number[] = [];
    for (let n = 0; n < 25; n++) junk.push(await junkPair(victim, n));
    // A made-up code is refused by the platform: the kit restarts the install once (302).
    expect(junk.filter((s) => s === 429)).toEqual([]);

    const merchant = new Browser();
    const store = platform.createStore({ name: 'Merchant' }).storeId;
    const begun = await merchant.get(`${appUrl}/auth?store_id=${store}`);
    expect(begun.status).toBe(302);
    const done = await merchant.get(
      platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId: store }),
    );
    expect(done.status).toBe(302);
    expect(done.headers.get('retry-after')).toBeNull();
    expect(await kit.installations.get(store)).not.toBeNull();
    // Every junk code went to the platform one at a time past the budget; the merchant's once.
    expect(platform.stats().tokenRequests.authorization_code - exchangesBefore).toBe(25 + 1);
  });

  it('says once, naming the setting and the fix, that callers without an address share a budget', () => {
    const noAddress = logs.filter((l) => l.setting === 'remoteAddress');
    // Once on the first kit request without an address, once when the shared budget ran out.
    expect(noAddress.map((l) => l.event ?? 'first-request')).toEqual([
      'first-request',
      'install.shared_budget',
    ]);
    for (const l of noAddress) expect(l.msg).toContain('remoteAddress');
    expect(noAddress[1]!.msg).toMatch(/trusted proxy|X-Forwarded-For/);
  });
});
