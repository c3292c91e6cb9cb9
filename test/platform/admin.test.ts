import { jwtVerify } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { install } from './helpers.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform.close();
});

const post = (path: string) =>
  request(platform.app).post(path).set('Origin', platform.url).type('form');

describe('merchant admin', () => {
  it('creates a store from the form and shows it', async () => {
    const res = await post('/admin/stores').send({ name: 'Form <b>Store</b>', currency: 'eur' });
    expect(res.status).toBe(303);
    const location = res.headers['location'] as string;
    expect(location).toMatch(/^\/admin\/stores\/[0-9a-f-]{36}$/);
    const page = await request(platform.app).get(location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Form &lt;b&gt;Store&lt;/b&gt;');
    expect(page.text).toContain('EUR');
    const list = await request(platform.app).get('/admin');
    expect(list.status).toBe(200);
    expect(list.text).toContain(location);
  });

  it('refuses a cross-site form post', async () => {
    const before =
      (await request(platform.app).get('/admin')).text.match(/\/admin\/stores\//g)?.length ?? 0;
    const res = await request(platform.app)
      .post('/admin/stores')
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ name: 'x' });
    expect(res.status).toBe(403);
    const after =
      (await request(platform.app).get('/admin')).text.match(/\/admin\/stores\//g)?.length ?? 0;
    expect(after).toBe(before);
  });

  it('lists installed apps with Open (signed launch JWT in an iframe) and Uninstall', async () => {
    const inst = await install(platform);
    const page = await request(platform.app).get(`/admin/stores/${inst.storeId}`);
    expect(page.text).toContain(`/admin/stores/${inst.storeId}/apps/${inst.clientId}`);
    expect(page.text).toContain('Uninstall');

    const open = await request(platform.app).get(
      `/admin/stores/${inst.storeId}/apps/${inst.clientId}`,
    );
    expect(open.status).toBe(200);
    const src = /<iframe[^>]+src="([^"]+)"/.exec(open.text)?.[1]?.replace(/&amp;/g, '&');
    expect(src).toBeDefined();
    const url = new URL(src!);
    expect(url.origin).toBe('http://127.0.0.1:9');
    expect(url.searchParams.get('store_id')).toBe(inst.storeId);
    expect(url.searchParams.get('embedded')).toBe('1');
    const { payload, protectedHeader } = await jwtVerify(
      url.searchParams.get('launch')!,
      new TextEncoder().encode(inst.clientSecret),
      { issuer: platform.url, audience: inst.clientId, subject: inst.storeId },
    );
    expect(protectedHeader.alg).toBe('HS256');
    expect(payload.exp! - payload.iat!).toBe(60);
    expect(payload.jti).toEqual(expect.any(String));
    expect(open.headers['content-security-policy']).toContain('frame-src http://127.0.0.1:9');

    const un = await post(`/admin/stores/${inst.storeId}/apps/${inst.clientId}/uninstall`).send({
      confirm: 'yes',
    });
    expect(un.status).toBe(303);
    const api = await fetch(`${platform.apiUrl}/stores/current`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
    });
    expect(api.status).toBe(401);
    const deliveries = platform.deliveries({ clientId: inst.clientId });
    expect(deliveries).toHaveLength(1);
    const dash = await request(platform.app).get(`/dashboard/apps/${inst.clientId}`);
    expect(dash.text).toContain(deliveries[0]!.id);
    expect(dash.text).toContain('app.uninstalled');
    const after = await request(platform.app).get(`/admin/stores/${inst.storeId}`);
    expect(after.text).toContain(`/admin/stores/${inst.storeId}/apps/${inst.clientId}/install`);
  });

  it('Uninstall asks first: the button opens a confirmation, an unconfirmed post deletes nothing', async () => {
    const inst = await install(platform);
    const uninstallPath = `/admin/stores/${inst.storeId}/apps/${inst.clientId}/uninstall`;
    const page = await request(platform.app).get(`/admin/stores/${inst.storeId}`);
    // The store page's button navigates (GET) to the confirmation; it posts nothing.
    expect(page.text).toContain(`<form class="inline" method="get" action="${uninstallPath}">`);
    expect(page.text).not.toContain(`method="post" action="${uninstallPath}"`);

    const confirm = await request(platform.app).get(uninstallPath);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('cannot be undone');
    expect(confirm.text).toContain('name="confirm" value="yes"');
    expect(confirm.text).toContain(`href="/admin/stores/${inst.storeId}">Cancel</a>`);

    const stillInstalled = async () =>
      (
        await fetch(`${platform.apiUrl}/stores/current`, {
          headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
        })
      ).status;
    // The old one-click post, or any post without the confirmation: sent to ask, nothing revoked.
    for (const body of [{}, { confirm: 'no' }]) {
      const un = await post(uninstallPath).send(body);
      expect(un.status).toBe(303);
      expect(un.headers['location']).toBe(uninstallPath);
    }
    expect(await stillInstalled()).toBe(200);
    expect(platform.deliveries({ clientId: inst.clientId })).toHaveLength(0);

    // Cross-site, even confirmed: refused.
    const forged = await request(platform.app)
      .post(uninstallPath)
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ confirm: 'yes' });
    expect(forged.status).toBe(403);
    expect(await stillInstalled()).toBe(200);

    const un = await post(uninstallPath).send({ confirm: 'yes' });
    expect(un.headers['location']).toBe(`/admin/stores/${inst.storeId}?notice=uninstalled`);
    expect(await stillInstalled()).toBe(401);
    // Twice: the app is no longer installed, nothing more happens.
    expect((await request(platform.app).get(uninstallPath)).status).toBe(404);
    expect((await post(uninstallPath).send({ confirm: 'yes' })).status).toBe(404);
    expect(platform.deliveries({ clientId: inst.clientId })).toHaveLength(1);
  });

  it('Install sends the browser to {appUrl}/auth?store_id=… at top level', async () => {
    const app = platform.registerApp({
      name: 'Installable',
      redirectUri: 'https://app.example/auth/callback',
      webhookUrl: 'https://app.example/webhooks',
      scopes: ['read_products'],
    });
    const { storeId } = platform.createStore();
    const res = await request(platform.app).get(
      `/admin/stores/${storeId}/apps/${app.clientId}/install`,
    );
    expect(res.status).toBe(302);
    expect(res.headers['location']).toBe(`https://app.example/auth?store_id=${storeId}`);
    expect(platform.installUrl({ clientId: app.clientId, storeId })).toBe(res.headers['location']);
  });

  it('answers 404 pages for unknown stores and apps', async () => {
    expect((await request(platform.app).get('/admin/stores/nope')).status).toBe(404);
    const { storeId } = platform.createStore();
    expect((await request(platform.app).get(`/admin/stores/${storeId}/apps/app_nope`)).status).toBe(
      404,
    );
  });
});

describe('developer dashboard', () => {
  it('renders the registration form with every scope and tier', async () => {
    const res = await request(platform.app).get('/dashboard');
    expect(res.status).toBe(200);
    expect(res.text).toContain('value="manage_fulfillments"');
    expect(res.text).toContain('value="elite"');
  });

  it('registers an app and shows its credentials', async () => {
    const res = await post('/dashboard/apps').send(
      'name=Dash+%3Cscript%3E&redirectUri=https%3A%2F%2Fdash.example%2Fcb&webhookUrl=https%3A%2F%2Fdash.example%2Fwh&scopes=read_products&scopes=read_orders&tier=partner',
    );
    expect(res.status).toBe(303);
    const page = await request(platform.app).get(res.headers['location'] as string);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Dash &lt;script&gt;');
    expect(page.text).not.toContain('<script>');
    const clientId = /\/dashboard\/apps\/([^?]+)/.exec(res.headers['location'] as string)![1]!;
    expect(page.text).toContain(clientId);
    expect(page.text).toMatch(/whsec_[A-Za-z0-9+/=]+/);
    expect(page.text).toContain('partner');
  });

  it('shows the validation error and keeps the input for a plain-http public URL', async () => {
    const res = await post('/dashboard/apps').send({
      name: 'Bad',
      redirectUri: 'http://example.com/cb',
      webhookUrl: 'https://example.com/wh',
      scopes: 'read_products',
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('https');
    expect(res.text).toContain('value="http://example.com/cb"');
  });
});
