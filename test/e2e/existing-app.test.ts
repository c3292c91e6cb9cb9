/**
 * Issue 32, tried as a new user would: the app that existed before the kit
 * (test/fixtures/existing-app: its own express-session, CSP with an inline script,
 * static files, global express.json(), 404 and error handler), the kit mounted as the
 * README says, in headless Chromium against the local platform over real sockets.
 * The merchant installs from the admin and sees the kit's page in the admin's iframe;
 * in the same browser the host's own page still runs its inline script under its own
 * policy (the kit's `script-src 'self'` would block it), and the host's session keeps
 * counting across the install.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import { pino } from 'pino';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { existingApp } from '../fixtures/existing-app/app.js';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.js';

const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env['CI'] === 'true') {
  throw new Error(`${CHROMIUM} is missing; .ci/run installs it (apt-get install chromium).`);
}

let dir = '';
let platform: Platform | undefined;
let kit: StoreAppKit | undefined;
let server: Server | undefined;
let browser: Browser | undefined;
let appUrl = '';
let storeId = '';

beforeAll(async () => {
  if (!chromiumPresent) return;
  dir = mkdtempSync(join(tmpdir(), 'e2e-existing-app-'));
  platform = await startPlatform({ logger: false });
  let app: Express | undefined;
  server = createServer((req, res) => app!(req, res));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const creds = platform.registerApp({
    name: 'Existing app',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
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
    storage: { databaseUrl: `file:${join(dir, 'app.db')}`, encryptionKeys: [generateKey()] },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: creds.webhookSecret },
    refresh: { sweepIntervalMs: 0 },
    logger: { instance: pino({ level: 'silent' }) },
  })) as StoreAppKit;
  app = existingApp(kit, { sessionSecret: randomBytes(32).toString('base64url') });
  storeId = platform.createStore({ name: 'Existing app store', seed: 2 }).storeId;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
  await kit?.close();
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it.skipIf(!chromiumPresent)(
  'in Chromium: installed from the admin, the kit page in its iframe; the host page, its inline script and its session as before',
  { timeout: 120_000 },
  async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(45_000);
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const counter = async () =>
      ((await (await page.goto(`${appUrl}/counter`))!.json()) as { visits: number }).visits;

    // The host, before the merchant installs anything: its page and its session.
    await page.goto(`${appUrl}/index.html`);
    await expect.poll(() => page.locator('#count').textContent()).toBe('host script ran');
    expect(await page.evaluate(() => (globalThis as { hostInline?: boolean }).hostInline)).toBe(
      true,
    );
    expect(await counter()).toBe(1);
    expect(await counter()).toBe(2);

    // The merchant's install, from the admin, through consent, back to the app in its iframe.
    await page.goto(`${platform!.adminUrl}/stores/${storeId}`);
    await page.getByRole('link', { name: 'Install' }).click();
    await page.getByRole('button', { name: /Approve/ }).click();
    await page.waitForURL(/\/admin\/stores\/[0-9a-f-]{36}\/apps\//);
    const frame = page.frameLocator('iframe.app');
    await expect.poll(() => frame.locator('h1').textContent()).toBe('Installed');
    expect(await kit!.installations.get(storeId)).not.toBeNull();

    // The host afterwards: the same session (the install did not replace it), its own
    // policy on its own page (the inline script runs), and no violation anywhere.
    expect(await counter()).toBe(3);
    const hostPage = await page.goto(`${appUrl}/index.html`);
    expect(hostPage!.headers()['content-security-policy']).toContain("'unsafe-inline'");
    await expect.poll(() => page.locator('#count').textContent()).toBe('host script ran');
    expect(await page.evaluate(() => (globalThis as { hostInline?: boolean }).hostInline)).toBe(
      true,
    );
    expect(violations).toEqual([]);
    await context.close();
  },
);
