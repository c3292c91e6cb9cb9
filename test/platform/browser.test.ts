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
