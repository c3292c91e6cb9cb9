/**
 * Issue 16, the template's merchant UI in a real browser (Debian's Chromium
 * driven by playwright-core), at 1280 px and at 390 px (a phone): install,
 * the store's name, the product list a page at a time by the API's cursor,
 * edit a note, the row's save feedback (success and failure), uninstall. Also
 * one of the kit's error pages, styled under its nonce CSP. Screenshots go to
 * test/e2e/artifacts/ (gitignored; CI keeps them).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type Browser, chromium, type FrameLocator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  ADMIN_STORE_URL,
  CHROMIUM,
  CHROMIUM_ARGS,
  cleanEnv,
  devEnv,
  type LaidTemplate,
  prepareTemplate,
  type Running,
  root,
  run,
} from './helpers.js';

const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env['CI'] === 'true') {
  throw new Error(`${CHROMIUM} is missing; .ci/run installs it (apt-get install chromium).`);
}

const ARTIFACTS = join(root, 'test', 'e2e', 'artifacts');
const SCOPES = 'read_products,read_orders,read_inventory,write_inventory,read_store_settings';
let laid: LaidTemplate | undefined;
let work: string | undefined;
let dev: Running | undefined;
let browser: Browser | undefined;
let adminStoreUrl = '';
let settings: Record<string, string>;

beforeAll(async () => {
  if (!chromiumPresent) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  laid = await prepareTemplate();
  work = mkdtempSync(join(tmpdir(), 'template-ui-'));
  settings = await devEnv(SCOPES);
  dev = run([join(laid.dist, 'dev.js')], work, {
    ...cleanEnv(),
    ...settings,
    DATABASE_URL: join(work, 'app.db'),
    STORE_PLATFORM_DB: join(work, 'platform.db'),
  });
  adminStoreUrl = (await dev.waitFor(ADMIN_STORE_URL))[0];
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
  laid?.remove();
});

/** Ids of the store's products, as the platform holds them. */
function platformProducts(storeId: string): string[] {
  const db = new Database(join(work!, 'platform.db'), { readonly: true });
  try {
    return (
      db.prepare('SELECT id FROM products WHERE store_id = ?').all(storeId) as { id: string }[]
    ).map((p) => p.id);
  } finally {
    db.close();
  }
}

function appRows(storeId: string, table: string): number {
  const db = new Database(join(work!, 'app.db'), { readonly: true });
  try {
    return (
      db.prepare(`SELECT count(*) AS n FROM ${table} WHERE store_id = ?`).get(storeId) as {
        n: number;
      }
    ).n;
  } finally {
    db.close();
  }
}

/** Widest content minus visible width, of the document in `frame` (0 when nothing overflows). */
function overflow(frame: FrameLocator): Promise<number> {
  return frame
    .locator('html')
    .evaluate((el) => el.scrollWidth - el.clientWidth)
    .then((n) => Number(n));
}

async function journey(page: Page, width: number): Promise<void> {
  const storeId = adminStoreUrl.split('/').pop()!;
  const shot = (name: string) =>
    page.screenshot({ path: join(ARTIFACTS, `template-${width}-${name}.png`), fullPage: true });
  const cspViolations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  const productRequests: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname === '/api/products') productRequests.push(u.search);
  });

  // Install from the admin.
  await page.goto(adminStoreUrl);
  // Each width starts from an uninstalled store, whatever the previous run left.
  if ((await page.getByRole('button', { name: 'Uninstall' }).count()) > 0) {
    await page.getByRole('button', { name: 'Uninstall' }).click();
    await page.getByRole('button', { name: /^Yes, uninstall/ }).click();
    await page.waitForURL(/notice=uninstalled/);
  }
  await page.getByRole('link', { name: 'Install' }).click();
  await page.getByRole('button', { name: /Approve/ }).click();
  await page.waitForURL(/\/admin\/stores\/[0-9a-f-]{36}\/apps\//);
  const frame = page.frameLocator('iframe.app');
  await expect
    .poll(() => frame.locator('body[data-loaded="true"]').count(), { timeout: 45_000 })
    .toBe(1);

  // The store by its name, not its id.
  expect(await frame.locator('#store-name').textContent()).toBe('Demo store');
  expect(await frame.locator('body').textContent()).not.toContain(storeId);

  // Page 1: 50 of the store's 60 products, loaded with one request and no cursor.
  const all = platformProducts(storeId);
  expect(all.length).toBeGreaterThan(50);
  const rows = frame.locator('#products tr');
  expect(await rows.count()).toBe(50);
  const ids = () =>
    rows.evaluateAll((trs) =>
      trs.map(
        (tr) =>
          (tr as unknown as { dataset: Record<string, string | undefined> }).dataset['productId'] ??
          '',
      ),
    );
  const page1 = await ids();
  expect(await frame.locator('#page-label').textContent()).toBe(
    `Page 1 of ${Math.ceil(all.length / 50)}`,
  );
  expect(productRequests).toEqual(['']);
  if (width <= 400) expect(await overflow(frame)).toBeLessThanOrEqual(0);
  await shot('1-list');

  // Edit a note on page 1: the row itself says "Saving…", then "Saved at …".
  const first = rows.first();
  await first.locator('input').fill('Reorder before the holidays');
  expect(await first.locator('.row-status').textContent()).toBe('Unsaved changes');
  await first.locator('button.save-note').click();
  await expect
    .poll(() => first.locator('.row-status').textContent(), { timeout: 45_000 })
    .toMatch(/^Saved at /);
  expect(await first.locator('.row-status').getAttribute('class')).toContain('ok');
  expect(await first.locator('.row-status').isVisible()).toBe(true);
  expect(appRows(storeId, 'product_notes')).toBe(1);

  // A failed save says so on its row, and nothing is claimed saved.
  await page.route('**/api/products/*/note', (route) =>
    route.fulfill({
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ code: 'UNAVAILABLE', message: 'Try again shortly.' }),
    }),
  );
  const second = rows.nth(1);
  await second.locator('input').fill('This one fails');
  await second.locator('button.save-note').click();
  await expect
    .poll(() => second.locator('.row-status').textContent(), { timeout: 45_000 })
    .toBe('Not saved: Try again shortly.');
  expect(await second.locator('.row-status').getAttribute('class')).toContain('error');
  await shot('2-save-feedback');
  await page.unroute('**/api/products/*/note');

  // Page 2 by the cursor the platform gave: the remaining products, none repeated.
  await frame.getByRole('button', { name: 'Next' }).click();
  await expect
    .poll(() => frame.locator('body').getAttribute('data-page'), { timeout: 45_000 })
    .toBe('2');
  const page2 = await ids();
  expect(page2.length).toBe(all.length - 50);
  expect(page2.filter((n) => page1.includes(n))).toEqual([]);
  expect([...page1, ...page2].sort()).toEqual([...all].sort());
  expect(productRequests.length).toBe(2);
  expect(productRequests[1]).toMatch(/^\?cursor=./);
  expect(await frame.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
  // A note saved on page 2 gets the same feedback.
  const onPage2 = rows.first();
  await onPage2.locator('input').fill('Page two note');
  await onPage2.locator('input').press('Enter');
  await expect
    .poll(() => onPage2.locator('.row-status').textContent(), { timeout: 45_000 })
    .toMatch(/^Saved at /);
  if (width <= 400) expect(await overflow(frame)).toBeLessThanOrEqual(0);
  await shot('3-page-2');
  await frame.locator('.pager').scrollIntoViewIfNeeded();
  await shot('4-pager');

  // Back to page 1: the saved note is there.
  await frame.getByRole('button', { name: 'Previous' }).click();
  await expect
    .poll(() => frame.locator('body').getAttribute('data-page'), { timeout: 45_000 })
    .toBe('1');
  expect(await rows.first().locator('input').inputValue()).toBe('Reorder before the holidays');
  expect(cspViolations).toEqual([]);

  // Uninstall: the app forgets the store.
  await page.goto(adminStoreUrl);
  await page.getByRole('button', { name: 'Uninstall' }).click();
  await page.getByRole('button', { name: /^Yes, uninstall/ }).click();
  await page.waitForURL(/notice=uninstalled/);
  await expect
    .poll(() => appRows(storeId, 'product_notes') + appRows(storeId, 'store_app_installations'), {
      timeout: 45_000,
    })
    .toBe(0);
}

for (const width of [1280, 390]) {
  it.skipIf(!chromiumPresent)(
    `at ${width} px: install, the store's name, paging by cursor, row save feedback, uninstall`,
    { timeout: 180_000 },
    async () => {
      const page = await browser!.newPage({ viewport: { width, height: width > 400 ? 900 : 844 } });
      page.setDefaultTimeout(45_000);
      try {
        await journey(page, width);
      } finally {
        await page.close();
      }
    },
  );
}

it.skipIf(!chromiumPresent)(
  "the kit's error pages are styled under their nonce CSP, at 390 px, with no secret or stack",
  { timeout: 60_000 },
  async () => {
    const page = await browser!.newPage({ viewport: { width: 390, height: 844 } });
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    try {
      // A callback whose install session is unknown: "Installation expired".
      const res = await page.goto(
        `${settings['STORE_APP_URL']}/auth/callback?code=not-a-code&state=not-a-state-0123456789`,
      );
      expect(res!.status()).toBeGreaterThanOrEqual(400);
      const heading = await page.locator('h1').textContent();
      expect(heading).toBeTruthy();
      // Styled: the stylesheet applied (card background, button look), nothing blocked.
      expect(
        await page.locator('main').evaluate(
          (el) =>
            (
              globalThis as unknown as {
                getComputedStyle(e: unknown): { backgroundColor: string };
              }
            ).getComputedStyle(el).backgroundColor,
        ),
      ).toBe('rgb(255, 255, 255)');
      expect(violations).toEqual([]);
      expect(
        await page.locator('html').evaluate((el) => el.scrollWidth - el.clientWidth),
      ).toBeLessThanOrEqual(0);
      const text = await page.locator('body').textContent();
      expect(text).not.toMatch(/at .*\.js:\d+|Error:|not-a-code|not-a-state/);
      for (const secret of ['STORE_APP_CLIENT_SECRET', 'STORE_APP_SESSION_SECRET']) {
        expect(await page.content()).not.toContain(settings[secret]!);
      }
      await page.screenshot({ path: join(ARTIFACTS, 'error-page-390.png'), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 700 });
      await page.screenshot({ path: join(ARTIFACTS, 'error-page-1280.png'), fullPage: true });
    } finally {
      await page.close();
    }
  },
);
