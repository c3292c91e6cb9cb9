/**
 * The platform's own forms in a real browser (Debian's headless Chromium via
 * playwright-core): the same-origin CSRF check must accept what browsers send.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { authorizeUrl, pkce, REDIRECT } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  throw new Error(`${CHROMIUM} is missing; install it (apt-get install chromium).`);
}

let platform: Platform;
let browser: Browser;
beforeAll(async () => {
  platform = await startPlatform();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await platform?.close();
});

it('consent Approve in a browser lands on redirect_uri with code, state and store_id', async () => {
  const app = platform.registerApp({
    name: 'Browser app',
    redirectUri: REDIRECT,
    webhookUrl: 'https://hooks.example/w',
    scopes: ['read_products'],
  });
  const { storeId } = platform.createStore({ name: 'Browser store' });
  const page = await browser.newPage();
  const callback = new Promise<string>((resolve) => {
    page.on('request', (r) => {
      if (r.url().startsWith(REDIRECT)) resolve(r.url());
    });
  });
  await page.goto(
    authorizeUrl(platform, {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      scope: 'read_products',
      state: 'browser-state',
      response_type: 'code',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    }),
  );
  await page.selectOption('select[name=store_id]', storeId);
  await page.click('button[value=approve]');
  const url = new URL(await callback);
  expect(url.searchParams.get('state')).toBe('browser-state');
  expect(url.searchParams.get('store_id')).toBe(storeId);
  expect(url.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  await page.close();
});

it('registers an app through the dashboard form in a browser', async () => {
  const page = await browser.newPage();
  await page.goto(platform.dashboardUrl);
  await page.fill('#name', 'Typed in a browser');
  await page.fill('#redirectUri', 'http://localhost:3000/auth/callback');
  await page.fill('#webhookUrl', 'http://localhost:3000/webhooks');
  await page.check('input[value=read_orders]');
  await Promise.all([
    page.waitForURL(/\/dashboard\/apps\/app_/),
    page.click('button[type=submit]'),
  ]);
  expect(await page.textContent('body')).toContain('Client secret');
  await page.close();
});

// Issue 32 item 10: the merchant admin on a phone. The installed-apps table (an app's URL, its
// scopes, Open and Uninstall) stays within a 390 px wide screen: no sideways scrolling.
it('the store page fits a 390 px wide screen with an app installed', async () => {
  const app = platform.registerApp({
    name: 'An app with a rather long name for a phone screen',
    redirectUri: 'https://a-long-subdomain-of-the-app.example.com/auth/callback',
    webhookUrl: 'https://a-long-subdomain-of-the-app.example.com/webhooks',
    appUrl: 'https://a-long-subdomain-of-the-app.example.com',
    scopes: [
      'read_products',
      'write_products',
      'read_orders',
      'write_orders',
      'read_inventory',
      'write_inventory',
      'read_customers',
      'read_store_settings',
    ],
  });
  platform.registerApp({
    name: 'Another app, not installed',
    redirectUri: REDIRECT,
    webhookUrl: 'https://hooks.example/w',
    scopes: ['read_products', 'read_orders', 'read_customers', 'read_store_settings'],
  });
  const { storeId } = platform.createStore({ name: 'Phone store' });
  platform.installMany({ clientId: app.clientId, storeIds: [storeId] });
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await page.goto(`${platform.adminUrl}/stores/${storeId}`);
  await page.getByText('Uninstall').first().waitFor();
  // A string: the tests are compiled without the DOM's types.
  const widths = (await page.evaluate(`({
    page: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    tables: [...document.querySelectorAll('.card')].map((card) => ({
      card: card.clientWidth,
      content: card.scrollWidth,
    })),
  })`)) as { page: number; viewport: number; tables: Array<{ card: number; content: number }> };
  expect(widths.page, JSON.stringify(widths)).toBeLessThanOrEqual(widths.viewport);
  for (const t of widths.tables)
    expect(t.content, JSON.stringify(widths)).toBeLessThanOrEqual(t.card);
  // Both buttons are on the screen.
  for (const name of ['Open', 'Uninstall']) {
    const box = await page.getByText(name, { exact: true }).first().boundingBox();
    expect(box!.x + box!.width, name).toBeLessThanOrEqual(390);
  }
  await page.close();
});
