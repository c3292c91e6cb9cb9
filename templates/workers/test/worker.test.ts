/**
 * The Worker in workerd (through Miniflare, the runtime `wrangler dev` runs) on a local
 * D1 database, over a real socket, against the local platform on another: a seeded store
 * installs the app as a merchant does, the JSON routes the embedded page calls answer with
 * the app session token, and the uninstall webhook deletes the store's data from D1
 * (its installation and this app's notes).
 */
import { randomBytes } from 'node:crypto';
import { type Platform, startPlatform } from 'store-app-kit/platform';
import { sendWebhook } from 'store-app-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type LocalWorker, startWorker } from '../dev/worker.js';

let platform: Platform;
let worker: LocalWorker;
let appUrl: string;
let clientId: string;
let webhookSecret: string;
let storeId: string;
let token: string;
const cookies = new Map<string, string>();

/** A GET as the merchant's browser makes it: its cookies for the app, no redirect followed. */
async function browse(url: string): Promise<Response> {
  const res = await fetch(url, {
    redirect: 'manual',
    headers: { accept: 'text/html', cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
  });
  for (const c of res.headers.getSetCookie()) {
    const pair = c.split(';')[0] ?? '';
    const eq = pair.indexOf('=');
    if (eq > 0) cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return res;
}

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${appUrl}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
  });

async function count(sql: string, ...params: string[]): Promise<number> {
  const db = await worker.mf.getD1Database('DB');
  const row = await db
    .prepare(sql)
    .bind(...params)
    .first<{ n: number }>();
  return Number(row?.n);
}

beforeAll(async () => {
  platform = await startPlatform({ logger: false });
  appUrl = `http://127.0.0.1:${await freePort()}`;
  const scopes = 'read_products,read_orders,read_inventory,write_inventory';
  const creds = platform.registerApp({
    name: 'Workers template test',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    appUrl,
    scopes,
  });
  ({ clientId, webhookSecret } = creds);
  // The Worker's variables and secrets, as .dev.vars or `wrangler secret put` give them.
  worker = await startWorker({
    port: Number(new URL(appUrl).port),
    vars: {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      STORE_APP_URL: appUrl,
      STORE_AUTH_URL: platform.authUrl,
      STORE_APP_SCOPES: scopes,
      STORE_APP_CLIENT_ID: clientId,
      STORE_APP_CLIENT_SECRET: creds.clientSecret,
      STORE_APP_WEBHOOK_SECRET: webhookSecret,
      STORE_APP_ENCRYPTION_KEYS: randomBytes(32).toString('base64url'),
      STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
    },
  });
});

afterAll(async () => {
  await worker?.close();
  await platform?.close();
});

describe('the Worker in workerd on D1', () => {
  it('installs into a seeded store from the local platform, over real sockets', async () => {
    ({ storeId } = platform.createStore({ name: 'Edge store', seed: true }));
    const begin = await browse(`${appUrl}/auth?store_id=${storeId}`);
    expect(begin.status).toBe(302);
    const callback = platform.approveInstall({
      authorizeUrl: begin.headers.get('location')!,
      storeId,
    });
    const done = await browse(callback);
    expect(done.status, await done.text()).toBe(302);
    // Tokens are sealed in D1 (a compact JWE), never stored as they are.
    const db = await worker.mf.getD1Database('DB');
    const row = await db
      .prepare('SELECT access_token_enc AS t FROM store_app_installations WHERE store_id = ?')
      .bind(storeId)
      .first<{ t: string }>();
    expect(row?.t.split('.')).toHaveLength(5);
    // The browser session the install started gives the page's app session token.
    const swap = await fetch(`${appUrl}/auth/session-token`, {
      headers: {
        accept: 'application/json',
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    expect(swap.status).toBe(200);
    ({ token } = (await swap.json()) as { token: string });
  });

  it('lists the store’s products with the app session token, and refuses a call without it', async () => {
    const res = await api('/api/products');
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { data: { name: string }[]; total: number; perPage: number };
    expect(body.data).toHaveLength(50);
    expect(body.total).toBe(60);
    // The kit's header set (store-app-kit/hono's middleware): a bearer call's answer
    // varies on Authorization.
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('vary')).toContain('Authorization');

    // hono.authenticated() answers the kit's refusal instead of the route, with the set too.
    const none = await fetch(`${appUrl}/api/products`, { headers: { accept: 'application/json' } });
    expect(none.status).toBe(401);
    expect(none.headers.get('x-content-type-options')).toBe('nosniff');
    const forged = await fetch(`${appUrl}/api/products`, {
      headers: { accept: 'application/json', authorization: `Bearer ${token.slice(0, -4)}AAAA` },
    });
    expect(forged.status).toBe(401);
  });

  it('answers bad input with 4xx, never a 500', async () => {
    const bad = await api('/api/inventory', {
      method: 'POST',
      body: JSON.stringify({ productId: 'nope', increment: 1 }),
    });
    expect(bad.status).toBe(422);
    const big = await api('/api/products/00000000-0000-4000-8000-000000000000/note', {
      method: 'PUT',
      body: JSON.stringify({ note: 'x'.repeat(20_000) }),
    });
    expect(big.status).toBe(413);
  });

  it('renders the embedded page and serves its script (the kit’s browser module bundled in) and styles', async () => {
    const page = await fetch(`${appUrl}/`, { headers: { authorization: `Bearer ${token}` } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/assets/home.js"></script>');
    expect(html).toContain(`<code id="store-name">${storeId}</code>`);
    expect(page.headers.get('content-security-policy')).toContain(
      `frame-ancestors ${new URL(platform.authUrl).origin}`,
    );
    const script = await fetch(`${appUrl}/assets/home.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    const code = await script.text();
    expect(code).not.toContain('/auth/browser.js');
    expect(code).toContain('session-token');
    const styles = await fetch(`${appUrl}/assets/home.css`);
    expect(styles.headers.get('content-type')).toMatch(/css/);
  });

  it('acknowledges a signed webhook and refuses a forged one', async () => {
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

  it('saves a note per product, and the uninstall webhook purges the store from D1, notes included', async () => {
    const products = (await (await api('/api/products')).json()) as { data: { id: string }[] };
    const productId = products.data[0]!.id;
    const saved = await api(`/api/products/${productId}/note`, {
      method: 'PUT',
      body: JSON.stringify({ note: 'Reorder in May' }),
    });
    expect(saved.status).toBe(200);
    const listed = (await (await api('/api/notes')).json()) as { data: unknown[] };
    expect(listed.data).toEqual([expect.objectContaining({ productId, note: 'Reorder in May' })]);

    const { deliveryId } = platform.uninstall({ storeId, clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    // Acknowledged once the purge committed: the store's rows are gone at the 200.
    expect(delivery?.attempts.at(-1)?.status).toBe(200);
    expect(
      await count('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?', storeId),
    ).toBe(0);
    expect(await count('SELECT count(*) AS n FROM product_notes WHERE store_id = ?', storeId)).toBe(
      0,
    );
    expect(
      await count('SELECT count(*) AS n FROM store_app_sessions WHERE store_id = ?', storeId),
    ).toBe(0);
    const after = await api('/api/notes');
    expect(after.status).toBe(401);
  });

  it('runs the background pass from the Cron Trigger’s scheduled()', async () => {
    const worker_ = (await worker.mf.getWorker()) as unknown as {
      scheduled(o: { cron: string }): Promise<{ outcome: string }>;
    };
    const result = await worker_.scheduled({ cron: '*/5 * * * *' });
    expect(result.outcome).toBe('ok');
  });
});
