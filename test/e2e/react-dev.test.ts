/**
 * Issue 34 item 3, the React template's dev loop in Chromium: `src/dev.ts` (what
 * `npm run dev` runs) starts the local platform and the app with Vite's dev server
 * inside it. The page opens in the admin's iframe under its dev-only policy (Vite's
 * injected scripts and styles by the response's nonce, its hot-reload socket on the
 * app's origin, framing by the admin only), with no violation; a saved change to the
 * UI shows in the frame without a reload (the page's state survives).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LaidTemplate, layOutTemplate } from '../helpers/template.js';
import {
  ADMIN_STORE_URL,
  CHROMIUM,
  CHROMIUM_ARGS,
  cleanEnv,
  devEnv,
  type Running,
  root,
  run,
} from './helpers.js';

const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env['CI'] === 'true') {
  throw new Error(`${CHROMIUM} is missing; .ci/run installs it (apt-get install chromium).`);
}
const SCOPES = 'read_products,read_orders,read_inventory,write_inventory,read_store_settings';
let laid: LaidTemplate | undefined;
let dev: Running | undefined;
let browser: Browser | undefined;
let settings: Record<string, string>;
let adminStoreUrl = '';

beforeAll(async () => {
  if (!chromiumPresent) return;
  laid = await layOutTemplate('react', { compile: false });
  settings = await devEnv(SCOPES);
  dev = run([join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'src/dev.ts'], laid.dir, {
    ...cleanEnv(),
    ...settings,
    DATABASE_URL: join(laid.dir, 'app.db'),
    STORE_PLATFORM_DB: join(laid.dir, 'platform.db'),
  });
  adminStoreUrl = (await dev.waitFor(ADMIN_STORE_URL, 0, 120_000))[0];
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (laid) rmSync(laid.dir, { recursive: true, force: true });
});

it.skipIf(!chromiumPresent)(
  'npm run dev: the page in the admin under the dev policy, and a saved change hot-reloaded',
  { timeout: 180_000 },
  async () => {
    const page = await browser!.newPage();
    page.setDefaultTimeout(60_000);
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    let policy = '';
    page.on('response', (r) => {
      const u = new URL(r.url());
      if (u.origin === settings['STORE_APP_URL'] && u.pathname === '/' && r.status() === 200) {
        policy = r.headers()['content-security-policy'] ?? '';
      }
    });
    await page.goto(adminStoreUrl);
    await page.getByRole('link', { name: 'Install' }).click();
    await page.getByRole('button', { name: /Approve/ }).click();
    await page.waitForURL(/\/admin\/stores\/[0-9a-f-]{36}\/apps\//);
    const frame = page.frameLocator('iframe.app');
    await expect
      .poll(() => frame.locator('body[data-loaded="true"]').count(), { timeout: 60_000 })
      .toBe(1);
    expect(await frame.locator('#store-name').textContent()).toBe('Demo store');

    // The dev policy: Vite's scripts and styles by nonce, its socket, the admin's framing.
    const appHost = new URL(settings['STORE_APP_URL']!).host;
    expect(policy).toMatch(/script-src 'self' 'nonce-[^']+'/);
    expect(policy).toMatch(/style-src 'self' 'nonce-[^']+'/);
    expect(policy).toContain(`connect-src 'self' ws://${appHost}`);
    expect(policy).toContain(`frame-ancestors ${new URL(settings['STORE_AUTH_URL']!).origin}`);
    expect(policy).not.toContain('unsafe');
    expect(violations).toEqual([]);

    // A saved change to the UI: shown in the frame, the page not reloaded.
    await frame
      .locator('body')
      .evaluate(() => ((globalThis as unknown as Record<string, unknown>)['kept'] = true));
    const app = join(laid!.dir, 'web', 'App.tsx');
    writeFileSync(
      app,
      readFileSync(app, 'utf8').replace('<h1>My store app</h1>', '<h1>My edited app</h1>'),
    );
    await expect
      .poll(() => frame.locator('h1').textContent(), { timeout: 60_000 })
      .toBe('My edited app');
    expect(
      await frame
        .locator('body')
        .evaluate(() => (globalThis as unknown as Record<string, unknown>)['kept']),
    ).toBe(true);
    expect(violations).toEqual([]);
    await page.close();
  },
);
