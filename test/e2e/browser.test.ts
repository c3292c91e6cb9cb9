/**
 * Issue 6 item 4: the merchant's path in a real browser (Debian's headless
 * Chromium driven by playwright-core). The example app (the Express template,
 * laid out as create-store-app lays it, compiled and linked to this
 * repository's built kit) runs with the local platform in one child process, like `npm run dev`.
 * Admin → Install → consent Approve → the app embedded in the admin iframe
 * shows the store's products → save a note → Uninstall → the app's database
 * holds nothing of that store. Before that, the same start with the app's port
 * held by another server fails with one line and no admin URL (issue 32).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type LaidTemplate, layOutTemplate } from '../helpers/template.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHROMIUM = '/usr/bin/chromium';
const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env['CI'] === 'true') {
  throw new Error(`${CHROMIUM} is missing; .ci/run installs it (apt-get install chromium).`);
}

let work: string;
let child: ChildProcess | undefined;
let browser: Browser | undefined;
let adminStoreUrl = '';
let output = '';
let laid: LaidTemplate | undefined;
/** The first start, made while another server held the app's port. */
let taken: { code: number | null; stdout: string; stderr: string; port: number } | undefined;

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

beforeAll(async () => {
  if (!chromiumPresent) return;
  work = mkdtempSync(join(tmpdir(), 'e2e-'));
  // Laid out as create-store-app lays it, in its own directory, so a parallel run cannot
  // rewrite the files this test is running.
  laid = await layOutTemplate('express');

  const [appPort, platformPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    NODE_ENV: 'development',
    PORT: String(appPort),
    STORE_APP_URL: `http://127.0.0.1:${appPort}`,
    STORE_AUTH_URL: `http://127.0.0.1:${platformPort}`,
    STORE_APP_CLIENT_ID: `app_${randomBytes(8).toString('hex')}`,
    STORE_APP_CLIENT_SECRET: randomBytes(32).toString('base64url'),
    STORE_APP_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    STORE_APP_SCOPES:
      'read_products,read_orders,read_inventory,write_inventory,read_store_settings',
    STORE_APP_ENCRYPTION_KEYS: randomBytes(32).toString('base64url'),
    STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
    DATABASE_URL: join(work, 'app.db'),
    STORE_PLATFORM_DB: join(work, 'platform.db'),
  };
  // Issue 32: first as a developer often meets it, with the app's port held by a
  // forgotten server; then, the port freed, the same command carries the journey below.
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(appPort, () => r()));
  taken = await new Promise((done) => {
    const first = spawn(process.execPath, [join(laid!.dist, 'dev.js')], {
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let out = '';
    let err = '';
    first.stdout!.on('data', (b: Buffer) => {
      out += b;
    });
    first.stderr!.on('data', (b: Buffer) => {
      err += b;
    });
    const timer = setTimeout(() => first.kill('SIGKILL'), 60_000);
    first.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout: out, stderr: err, port: appPort });
    });
  });
  await new Promise((r) => holder.close(r));

  child = spawn(process.execPath, [join(laid.dist, 'dev.js')], {
    // A directory without .env: every setting comes from here.
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  const collect = (b: Buffer) => {
    output += b.toString();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const deadline = Date.now() + 60_000;
  while (!/http:\/\/\S+\/admin\/stores\/[0-9a-f-]{36}/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`dev did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  adminStoreUrl = /http:\/\/\S+\/admin\/stores\/[0-9a-f-]{36}/.exec(output)![0];

  // Playwright gives every launch a fresh temporary user-data dir (and refuses --user-data-dir).
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  if (work) rmSync(work, { recursive: true, force: true });
  laid?.remove();
});

it.skipIf(!chromiumPresent)(
  'the dev loop with the app port taken: one line naming the port, the setting and the fix; exit 1; no admin URL',
  () => {
    expect(taken!.code, taken!.stderr).toBe(1);
    const lines = taken!.stderr.trim().split('\n');
    expect(lines, taken!.stderr).toHaveLength(1);
    expect(lines[0]).toContain(`Port ${taken!.port}`);
    expect(lines[0]).toMatch(/is already in use/);
    expect(lines[0]).toContain('PORT');
    expect(taken!.stdout + taken!.stderr).not.toMatch(/\/admin\/stores\//);
  },
);

it.skipIf(!chromiumPresent)(
  'the port freed: merchant installs, uses and uninstalls the embedded app in Chromium',
  { timeout: 180_000 },
  async () => {
    const storeId = adminStoreUrl.split('/').pop()!;
    const page = await browser!.newPage();
    // Generous: in CI, Chromium shares two cores with the generated-project install and the
    // crash tests; a step once took over 15 s there.
    page.setDefaultTimeout(45_000);
    // On failure, say where the browser was: each top-level response (path only, no
    // query: it may hold a code or state) and the dev process's last output.
    const trail: string[] = [];
    page.on('response', (r) => {
      if (r.request().isNavigationRequest()) {
        const u = new URL(r.url());
        trail.push(`${r.status()} ${u.origin}${u.pathname}`);
      }
    });
    try {
      await merchantJourney(page, storeId);
    } catch (err) {
      const body = (await page.content().catch(() => '')).replace(/\s+/g, ' ').slice(0, 600);
      throw new Error(
        `${(err as Error).message}\nnavigations:\n  ${trail.join('\n  ')}\npage: ${body}\ndev output (tail):\n${output
          .slice(-1500)
          .split('\n')
          .filter((l) => !/secret|key/i.test(l))
          .join('\n')}`,
        { cause: err },
      );
    }
  },
);

async function merchantJourney(page: Page, storeId: string): Promise<void> {
  await page.goto(adminStoreUrl);
  await page.getByRole('link', { name: 'Install' }).click();
  await page.getByRole('button', { name: /Approve/ }).click();

  // Back in the admin, with the app in its iframe.
  await page.waitForURL(/\/admin\/stores\/[0-9a-f-]{36}\/apps\//);
  const frame = page.frameLocator('iframe.app');
  await expect
    .poll(() => frame.locator('body[data-loaded="true"]').count(), { timeout: 45_000 })
    .toBe(1);

  const platformDb = new Database(join(work, 'platform.db'), { readonly: true });
  const storeProducts = (
    platformDb.prepare('SELECT name FROM products WHERE store_id = ?').all(storeId) as {
      name: string;
    }[]
  ).map((p) => p.name);
  platformDb.close();
  const shown = await frame.locator('td.product-name').allTextContents();
  expect(storeProducts.length).toBeGreaterThan(0);
  expect(shown.length).toBe(Math.min(50, storeProducts.length));
  for (const name of shown) expect(storeProducts).toContain(name);

  // The example write: a note on the first product, stored in the app's own table.
  const first = frame.locator('#products tr').first();
  await first.locator('input').fill('Reorder before the holidays');
  await first.locator('button.save-note').click();
  await expect
    .poll(() => frame.locator('#status').textContent(), { timeout: 45_000 })
    .toContain('Note saved');

  // The write against the platform: +1 stock, shown from the platform's answer.
  const stock = first.locator('td.stock');
  const before = Number(await stock.textContent());
  await first.locator('button.add-stock').click();
  await expect.poll(() => stock.textContent(), { timeout: 45_000 }).toBe(String(before + 1));

  mkdirSync(join(root, 'test-artifacts'), { recursive: true });
  await page.screenshot({
    path: join(root, 'test-artifacts', 'embedded-app.png'),
    fullPage: true,
  });

  const appDb = new Database(join(work, 'app.db'), { readonly: true });
  const count = (table: string) =>
    (
      appDb.prepare(`SELECT count(*) AS n FROM ${table} WHERE store_id = ?`).get(storeId) as {
        n: number;
      }
    ).n;
  expect(count('product_notes')).toBe(1);
  expect(count('store_app_installations')).toBe(1);

  // Uninstall from the admin: tokens revoked, app.uninstalled delivered, store purged.
  await page.goto(adminStoreUrl);
  await page.getByRole('button', { name: 'Uninstall' }).click();
  await page.getByRole('button', { name: /^Yes, uninstall/ }).click();
  await page.waitForURL(/notice=uninstalled/);
  await expect
    .poll(() => count('product_notes') + count('store_app_installations'), { timeout: 45_000 })
    .toBe(0);
  for (const table of ['store_app_sessions']) {
    expect(count(table), table).toBe(0);
  }
  appDb.close();
}
