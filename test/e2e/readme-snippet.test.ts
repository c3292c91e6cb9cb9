/**
 * Issue 16: following the README's "Mount in an existing Express app" snippet
 * lands the merchant on a page, not "Cannot GET /". The snippet is taken from
 * README.md as written (only its port becomes a free one), run as a program
 * importing the built kit, installed from the local platform's admin in
 * Chromium, and the merchant's landing page is read.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { type Platform, startPlatform } from 'store-app-kit/platform';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS, cleanEnv, devEnv, type Running, root, run } from './helpers.js';

const chromiumPresent = existsSync(CHROMIUM);
if (!chromiumPresent && process.env['CI'] === 'true') {
  throw new Error(`${CHROMIUM} is missing; .ci/run installs it (apt-get install chromium).`);
}

/** The first ```ts block under the README heading. */
function readmeSnippet(heading: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const at = readme.indexOf(`## ${heading}\n`);
  if (at < 0) throw new Error(`README has no "## ${heading}" section`);
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error(`README's "${heading}" has no ts block`);
  return block[1]!;
}

let work: string | undefined;
let platform: Platform | undefined;
let app: Running | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  if (!chromiumPresent) return;
  // Inside the repository (a gitignored folder), so `import 'store-app-kit'` resolves to
  // this package itself, as it would from an app's node_modules.
  mkdirSync(join(root, 'test-artifacts'), { recursive: true });
  work = mkdtempSync(join(root, 'test-artifacts', 'readme-snippet-'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await platform?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

it.skipIf(!chromiumPresent)(
  "the README's mount snippet: after Install and Approve the merchant sees the app's page",
  { timeout: 120_000 },
  async () => {
    const snippet = readmeSnippet('Mount in an existing Express app');
    // The snippet's code, TypeScript without types, runs as JavaScript on a free port.
    expect(snippet).toContain('app.listen(3000);');
    // Issue 32 item 10: `trust proxy` only when the app is behind a proxy, never as a line of
    // its own (an app without a proxy would take a client-sent X-Forwarded-For as the address).
    expect(snippet).toContain("app.set('trust proxy', 1)");
    expect(snippet).not.toMatch(/^app\.set\('trust proxy'/m);
    const program = snippet.replace('app.listen(3000);', 'app.listen(Number(process.env.PORT));');
    writeFileSync(join(work!, 'server.mjs'), program);

    platform = await startPlatform();
    const settings = await devEnv('read_products');
    const env = {
      ...settings,
      STORE_AUTH_URL: platform.authUrl,
      DATABASE_URL: join(work!, 'app.db'),
    };
    platform.registerApp({
      name: 'README app',
      redirectUri: `${env.STORE_APP_URL}/auth/callback`,
      webhookUrl: `${env.STORE_APP_URL}/webhooks`,
      scopes: env.STORE_APP_SCOPES,
      clientId: env.STORE_APP_CLIENT_ID,
      clientSecret: env.STORE_APP_CLIENT_SECRET,
      webhookSecret: env.STORE_APP_WEBHOOK_SECRET,
    });
    const store = platform.createStore({ name: 'README store', seed: 3 });
    app = run([join(work!, 'server.mjs')], work!, { ...cleanEnv(), ...env });
    // Listening once /auth answers.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(`${env.STORE_APP_URL}/auth?store_id=${store.storeId}`, {
        redirect: 'manual',
      }).then(
        (r) => r.status === 302,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline || app.child.exitCode !== null) {
        throw new Error(`the snippet did not start:\n${app.output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }

    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const page = await browser.newPage();
    page.setDefaultTimeout(45_000);
    await page.goto(`${platform.adminUrl}/stores/${store.storeId}`);
    await page.getByRole('link', { name: 'Install' }).click();
    await page.getByRole('button', { name: /Approve/ }).click();
    await page.waitForURL(/\/admin\/stores\/[0-9a-f-]{36}\/apps\//);
    const frame = page.frameLocator('iframe.app');
    await expect.poll(() => frame.locator('h1').textContent()).toBe('My app is installed');
    expect(await frame.locator('body').textContent()).not.toContain('Cannot GET');
    await page.screenshot({
      path: join(root, 'test', 'e2e', 'artifacts', 'readme-snippet.png'),
      fullPage: true,
    });
    // The snippet's API route answers for the installed store too.
    const products = await frame
      .locator('body')
      .evaluate(() => fetch('/api/products').then((r) => r.status));
    expect(products).toBe(200);
  },
);
