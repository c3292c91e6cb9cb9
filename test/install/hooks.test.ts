/**
 * beforeInstall / afterInstall, the non-embedded landing page and return_to,
 * over real sockets on a SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTokenCipher, generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import type { AfterInstallContext, InstallHookContext } from '../../src/install/options.js';
import { Browser, begin, type Harness, SCOPES, startHarness } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-hooks-'));
let h: Harness;
let beforeCalls: InstallHookContext[] = [];
let afterCalls: AfterInstallContext[] = [];
let failBefore = false;
let failAfter = false;

beforeAll(async () => {
  h = await startHarness({
    databaseUrl: join(dir, 'hooks.db'),
    kit: {
      embedded: { enabled: false },
      auth: {
        beforeInstall(ctx) {
          beforeCalls.push(ctx);
          if (failBefore) throw new Error('seed failed');
        },
        async afterInstall(ctx) {
          afterCalls.push(ctx);
          if (failAfter) throw new Error('welcome mail failed');
        },
      },
    },
  });
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  beforeCalls = [];
  afterCalls = [];
  failBefore = false;
  failAfter = false;
  await h.kit.installations.delete(h.storeId);
});

async function install(browser = new Browser(), beginPath?: string): Promise<Response> {
  const authorizeUrl = beginPath
    ? (await browser.get(`${h.appUrl}${beginPath}`)).headers.get('location')!
    : await begin(h, browser);
  return browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
}

describe('install hooks', () => {
  it('run around storing, with the store and granted scopes; non-embedded lands on the app URL', async () => {
    const res = await install();
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${h.appUrl}/?store_id=${h.storeId}`);
    expect(beforeCalls).toEqual([
      { storeId: h.storeId, scopes: expect.arrayContaining(SCOPES), missingScopes: [] },
    ]);
    expect(afterCalls).toHaveLength(1);
    expect(afterCalls[0]!.reinstall).toBe(false);
    expect(afterCalls[0]!.installation.storeId).toBe(h.storeId);
    await install();
    expect(afterCalls[1]!.reinstall).toBe(true);
  });

  it('a reinstall recovers a store whose stored tokens no longer decrypt (key lost)', async () => {
    expect((await install()).status).toBe(302);
    // As after losing an encryption key: the row exists, its ciphertexts are unreadable.
    const other = createTokenCipher([generateKey()]);
    const foreign = await other.encrypt('at_lost', h.storeId);
    (h.kit.db as BetterSQLite3Database).run(
      sql`UPDATE store_app_installations SET access_token_enc = ${foreign}, refresh_token_enc = ${foreign}`,
    );
    await expect(h.kit.installations.get(h.storeId)).rejects.toMatchObject({
      code: 'UNKNOWN_KEY_ID',
    });
    const res = await install();
    expect(res.status).toBe(302);
    expect(afterCalls[1]!.reinstall).toBe(true);
    const inst = await h.kit.installations.get(h.storeId);
    expect(inst!.accessToken).toEqual(afterCalls[1]!.installation.accessToken);
  });

  it('a throwing beforeInstall answers 500, stores nothing and is logged', async () => {
    failBefore = true;
    const res = await install();
    expect(res.status).toBe(500);
    expect(res.headers.get('x-store-app-error')).toBe(E.HOOK_FAILED);
    expect(await res.text()).not.toContain('seed failed');
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
    expect(afterCalls).toHaveLength(0);
    expect(h.logs.join('')).toContain('beforeInstall hook failed');
  });

  it('a throwing afterInstall answers 500 and keeps the installation', async () => {
    failAfter = true;
    const res = await install();
    expect(res.status).toBe(500);
    expect(res.headers.get('x-store-app-error')).toBe(E.HOOK_FAILED);
    expect(await h.kit.installations.get(h.storeId)).not.toBeNull();
    expect(h.logs.join('')).toContain('afterInstall hook failed');
  });

  it('return_to sends the merchant back to an app path; an off-site return_to is ignored', async () => {
    const ok = await install(
      new Browser(),
      `/auth?store_id=${h.storeId}&return_to=${encodeURIComponent('/orders?x=1')}`,
    );
    expect(ok.headers.get('location')).toBe(`${h.appUrl}/orders?x=1`);
    const evil = await install(
      new Browser(),
      `/auth?store_id=${h.storeId}&return_to=${encodeURIComponent('//evil.example/')}`,
    );
    expect(evil.headers.get('location')).toBe(`${h.appUrl}/?store_id=${h.storeId}`);
    for (const off of ['/\\evil.example/', 'https://evil.example/', '/\t/evil.example/']) {
      const res = await install(
        new Browser(),
        `/auth?store_id=${h.storeId}&return_to=${encodeURIComponent(off)}`,
      );
      expect(res.headers.get('location')).toBe(`${h.appUrl}/?store_id=${h.storeId}`);
    }
  });

  it('an install without a store_id lets the consent page pick the store', async () => {
    const b = new Browser();
    const res = await b.get(`${h.appUrl}/auth`);
    expect(res.status).toBe(302);
    const authorizeUrl = res.headers.get('location')!;
    expect(new URL(authorizeUrl).searchParams.has('store_id')).toBe(false);
    const cb = await b.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
    expect(cb.status).toBe(302);
    expect(await h.kit.installations.get(h.storeId)).not.toBeNull();
  });

  it('hasRequiredScopes turns false when the configured scopes grow beyond the grant', async () => {
    await install();
    const inst = (await h.kit.installations.get(h.storeId))!;
    expect(h.kit.installations.hasRequiredScopes(inst)).toBe(true);
    expect(h.kit.installations.hasRequiredScopes({ ...inst, scopes: ['read_products'] })).toBe(
      false,
    );
  });
});
