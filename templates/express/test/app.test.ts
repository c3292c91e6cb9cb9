/**
 * Runs the app against the local platform over real sockets: install a
 * seeded store, use the JSON routes the embedded page calls, then uninstall
 * and check that the store's data is gone.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Platform, startPlatform } from 'store-app-kit/platform';
import { installStore, sendWebhook } from 'store-app-kit/testing';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../src/app.js';
import { createNotesRepository } from '../src/db/notes.js';

let platform: Platform;
let server: Server;
let appUrl: string;
let app: App;
let storeId: string;
let token: string;
let dataDir: string;
const clientId = `app_${randomBytes(8).toString('hex')}`;
const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
const clientSecret = randomBytes(32).toString('base64url');

/** The admin's launch token for the store (the platform contract: HS256, client secret). */
function launchToken(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const iat = Math.floor(Date.now() / 1000);
  const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({
    iss: platform.authUrl,
    aud: clientId,
    sub: storeId,
    iat,
    exp: iat + 60,
    jti: randomUUID(),
  })}`;
  return `${body}.${createHmac('sha256', clientSecret).update(body).digest('base64url')}`;
}

beforeAll(async () => {
  platform = await startPlatform({ webhookRetrySchedule: [1] });
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dataDir = mkdtempSync(join(tmpdir(), 'store-app-test-'));

  const scopes = 'read_products,read_orders,read_inventory,write_inventory';
  await platform.registerApp({
    name: 'Template test',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes,
    clientId,
    clientSecret,
    webhookSecret,
  });
  // The app reads its settings from the environment, exactly as with .env.
  Object.assign(process.env, {
    NODE_ENV: 'test',
    STORE_APP_URL: appUrl,
    STORE_AUTH_URL: platform.authUrl,
    STORE_APP_CLIENT_ID: clientId,
    STORE_APP_CLIENT_SECRET: clientSecret,
    STORE_APP_WEBHOOK_SECRET: webhookSecret,
    STORE_APP_SCOPES: scopes,
    STORE_APP_ENCRYPTION_KEYS: randomBytes(32).toString('base64url'),
    STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
    DATABASE_URL: process.env['TEST_DATABASE_URL'] ?? join(dataDir, 'app.db'),
  });
  app = await createApp();
  server.on('request', app.app);

  // One call: a seeded store, installed through the app's /auth as a merchant would.
  ({ storeId, sessionToken: token } = await installStore({
    platform,
    appUrl,
    kit: app.kit,
    seed: true,
  }));
});

afterAll(async () => {
  server?.close();
  await app?.close();
  await platform?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('embedded app', () => {
  it('lists the store’s products through the app’s own API', async () => {
    const res = await request(appUrl).get('/api/products').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    const expected = await app.kit.client(storeId).products.list({ limit: 50 });
    expect(res.body.data.length).toBeGreaterThan(0);
    expect(res.body.data.map((p: { name: string }) => p.name)).toEqual(
      expected.data.map((p) => p.name),
    );
  });

  it('pages products 50 at a time by the platform cursor', async () => {
    const auth = { Authorization: `Bearer ${token}` };
    const first = await request(appUrl).get('/api/products').set(auth);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(50);
    expect(first.body.perPage).toBe(50);
    expect(first.body.total).toBe(60);
    expect(typeof first.body.nextCursor).toBe('string');
    const second = await request(appUrl)
      .get('/api/products')
      .query({ cursor: first.body.nextCursor })
      .set(auth);
    expect(second.status).toBe(200);
    expect(second.body.data).toHaveLength(10);
    expect(second.body.nextCursor).toBeNull();
    const ids = (page: { body: { data: { id: string }[] } }) => page.body.data.map((p) => p.id);
    expect(ids(second).filter((id) => ids(first).includes(id))).toEqual([]);
  });

  it('answers a malformed or unknown cursor with 4xx, never a 500', async () => {
    const auth = { Authorization: `Bearer ${token}` };
    for (const cursor of ['<script>', 'x'.repeat(600), ['a', 'b']]) {
      const res = await request(appUrl).get('/api/products').query({ cursor }).set(auth);
      expect(res.status, String(cursor)).toBe(422);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    const unknown = await request(appUrl)
      .get('/api/products')
      .query({ cursor: 'bm90LWEtY3Vyc29y' })
      .set(auth);
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(unknown.status).toBeLessThan(500);
  });

  it('lists recent orders', async () => {
    const res = await request(appUrl).get('/api/orders').set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.data)).toBe(true);
    expect(res.body.data.length).toBeLessThanOrEqual(10);
  });

  it('answers the health probe without credentials with liveness only, nothing about any store', async () => {
    const res = await request(appUrl).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(JSON.stringify(res.body)).not.toContain(storeId);
  });

  it('refuses API calls without a valid app session token', async () => {
    const none = await request(appUrl).get('/api/products').set('Accept', 'application/json');
    expect(none.status).toBe(401);
    const forged = await request(appUrl)
      .get('/api/products')
      .set('Accept', 'application/json')
      .set('Authorization', `Bearer ${token.slice(0, -4)}AAAA`);
    expect(forged.status).toBe(401);
  });

  it('renders the home page with its script and styles as files the CSP allows, no inline code', async () => {
    // As the admin opens it: a navigation in its iframe with a launch token (a bearer
    // call would get only the script-read headers, no CSP).
    const res = await request(appUrl)
      .get(`/?store_id=${storeId}&embedded=1&launch=${launchToken()}`)
      .set('Sec-Fetch-Dest', 'iframe')
      .set('Sec-Fetch-Mode', 'navigate');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<script type="module" src="/assets/home.js"></script>');
    expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|nonce=/);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toMatch(/(^|;)\s*script-src 'self'\s*(;|$)/);
    expect(csp).toMatch(/(^|;)\s*style-src 'self'\s*(;|$)/);
    expect(csp).not.toMatch(/nonce|unsafe/);
    // Without read_store_settings the store's name cannot be read: its id stands in.
    expect(res.text).toContain(`<code id="store-name">${storeId}</code>`);
    // The script, its styles and the kit's browser module it imports, from this origin.
    for (const [path, type] of [
      ['/assets/home.js', /javascript/],
      ['/assets/home.css', /css/],
      ['/auth/browser.js', /javascript/],
    ] as const) {
      const file = await request(appUrl).get(path);
      expect(file.status, path).toBe(200);
      expect(file.headers['content-type'], path).toMatch(type);
    }
  });

  it('adjusts inventory on the platform (the example write)', async () => {
    const products = await app.kit.client(storeId).products.list({ limit: 1 });
    const product = products.data[0]!;
    const res = await request(appUrl)
      .post('/api/inventory')
      .set('Authorization', `Bearer ${token}`)
      .send({ productId: product.id, increment: 1 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.inventoryQuantity).toBe((product.inventoryQuantity ?? 0) + 1);
  });

  it('answers bad input with 4xx and changes nothing', async () => {
    const products = await app.kit.client(storeId).products.list({ limit: 1 });
    const product = products.data[0]!;
    const auth = { Authorization: `Bearer ${token}` };
    const bad = await request(appUrl)
      .post('/api/inventory')
      .set(auth)
      .send({ productId: product.id, increment: 1.5 });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('VALIDATION_ERROR');
    const malformed = await request(appUrl)
      .post('/api/inventory')
      .set(auth)
      .set('Content-Type', 'application/json')
      .send('{"productId":');
    expect(malformed.status).toBe(400);
    const long = await request(appUrl)
      .put(`/api/products/${product.id}/note`)
      .set(auth)
      .send({ note: 'x'.repeat(1001) });
    expect(long.status).toBe(422);
    const after = await app.kit.client(storeId).products.get(product.id);
    expect(after.inventoryQuantity).toBe(product.inventoryQuantity);
  });

  it('acknowledges signed webhooks of any topic and refuses a forged one', async () => {
    const url = `${appUrl}/webhooks`;
    const payload = { data: { product_id: 'p1' } };
    const ok = await sendWebhook({
      url,
      secret: webhookSecret,
      topic: 'products.updated',
      payload,
    });
    expect(ok.status).toBe(200);
    const forged = `whsec_${randomBytes(32).toString('base64')}`;
    const bad = await sendWebhook({ url, secret: forged, topic: 'products.updated', payload });
    expect(bad.status).toBe(401);
  });

  it('saves a note per product and deletes the store’s notes on uninstall', async () => {
    const products = await app.kit.client(storeId).products.list({ limit: 1 });
    const productId = products.data[0]!.id;
    const auth = { Authorization: `Bearer ${token}` };
    const saved = await request(appUrl)
      .put(`/api/products/${productId}/note`)
      .set(auth)
      .send({ note: 'Reorder in May' });
    expect(saved.status).toBe(200);
    const listed = await request(appUrl).get('/api/notes').set(auth);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ productId, note: 'Reorder in May' }),
    ]);

    const notes = createNotesRepository(app.kit.db, app.kit.dialect);
    await platform.uninstall({ storeId, clientId });
    const deadline = Date.now() + 10_000;
    while ((await app.kit.installations.get(storeId)) !== null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await app.kit.installations.get(storeId)).toBeNull();
    expect(await notes.list(storeId)).toEqual([]);
  });
});
