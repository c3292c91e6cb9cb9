/**
 * `store-app-kit/testing` helpers against a real app (storeApp() + Express on
 * a socket) and the local platform: one call installs a store and hands back
 * its id, an app session token the app accepts and the kit's client; signed
 * webhooks of any topic reach the app's handlers, typed by augmentation.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeApp } from '../../src/index.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { installStore, sendWebhook } from '../../src/testing/index.js';
import { offlineKitOptions } from '../helpers/config.js';

declare module '../../src/index.js' {
  interface WebhookTopics {
    'testing.order_created': {
      type: 'testing.order_created';
      data: { order_id: string; total: number };
    };
  }
}

let platform: Platform;
let kit: Awaited<ReturnType<typeof storeApp>>;
let server: Server;
let appUrl: string;
let dir: string;
const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
const received: Array<{ id: string; orderId: string; total: number }> = [];

beforeAll(async () => {
  platform = await startPlatform({ logger: false });
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'testing-helpers-'));
  const clientId = `app_${randomBytes(8).toString('hex')}`;
  const clientSecret = randomBytes(32).toString('base64url');
  const scopes = ['read_products', 'read_orders'];
  platform.registerApp({
    name: 'Helpers app',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes,
    clientId,
    clientSecret,
    webhookSecret,
  });
  kit = await storeApp(
    offlineKitOptions({
      appUrl,
      oauth: { clientId, clientSecret, scopes, authUrl: platform.authUrl },
      webhooks: { secrets: webhookSecret },
      session: { secret: randomBytes(32).toString('base64url') },
      storage: { databaseUrl: join(dir, 'app.db') },
    }),
  );
  kit.webhooks.on('testing.order_created', (event) => {
    // Typed by the augmentation above: no cast.
    received.push({
      id: event.id,
      orderId: event.payload.data.order_id,
      total: event.payload.data.total,
    });
  });
  const app = express();
  app.use(kit.middleware());
  app.get('/api/products', kit.authenticated(), async (_req, res) => {
    res.json(await res.locals.store.client.products.list({ limit: 5 }));
  });
  server.on('request', app);
});

afterAll(async () => {
  server?.close();
  await kit?.close();
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('installStore', () => {
  it('installs a seeded store through the app and returns its id, a session token and the client', async () => {
    const { storeId, sessionToken, client } = await installStore({
      platform,
      appUrl,
      kit,
      seed: 3,
    });
    expect(await kit.installations.get(storeId)).not.toBeNull();
    const direct = await client.products.list({ limit: 5 });
    expect(direct.data).toHaveLength(3);
    const viaApp = await fetch(`${appUrl}/api/products`, {
      headers: { authorization: `Bearer ${sessionToken}`, accept: 'application/json' },
    });
    expect(viaApp.status).toBe(200);
    const body = (await viaApp.json()) as { data: Array<{ id: string }> };
    expect(body.data.map((p) => p.id)).toEqual(direct.data.map((p) => p.id));
  });

  it('fails with a clear error when the app does not start an install', async () => {
    await expect(installStore({ platform, appUrl, kit, authPath: '/nowhere' })).rejects.toThrow(
      /GET \/nowhere answered 404/,
    );
  });
});

describe('sendWebhook', () => {
  it('delivers a signed webhook of any topic; the handler gets the typed payload once', async () => {
    const sent = await sendWebhook({
      url: `${appUrl}/webhooks`,
      secret: webhookSecret,
      topic: 'testing.order_created',
      payload: { data: { order_id: 'o-1', total: 12.5 } },
    });
    expect(sent.status).toBeLessThan(300);
    const again = await sendWebhook({
      url: `${appUrl}/webhooks`,
      secret: webhookSecret,
      topic: 'testing.order_created',
      payload: { data: { order_id: 'o-1', total: 12.5 } },
      id: sent.id,
    });
    expect(again.status).toBeLessThan(300);
    expect(received).toEqual([{ id: sent.id, orderId: 'o-1', total: 12.5 }]);
  });

  it('a delivery signed with another secret is refused and runs no handler', async () => {
    const before = received.length;
    const forged = await sendWebhook({
      url: `${appUrl}/webhooks`,
      secret: `whsec_${randomBytes(32).toString('base64')}`,
      topic: 'testing.order_created',
      payload: { data: { order_id: 'o-2', total: 1 } },
    });
    expect(forged.status).toBe(401);
    expect(received.length).toBe(before);
  });

  it('types payloads of declared topics', () => {
    const typed = () =>
      sendWebhook({
        url: 'http://127.0.0.1:9/webhooks',
        secret: webhookSecret,
        topic: 'testing.order_created',
        // @ts-expect-error total must be a number for orders.created
        payload: { data: { order_id: 'o', total: 'twelve' } },
      });
    expect(typeof typed).toBe('function');
  });
});
