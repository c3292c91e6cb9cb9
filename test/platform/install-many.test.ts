/**
 * platform.installMany (issue 24's fast seeding): installs an app on many
 * stores in one go, and what it hands out are real grants: the API accepts
 * the access tokens and the token endpoint refreshes the refresh tokens, over
 * real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PLATFORM_INVALID_APP,
  PLATFORM_NOT_INSTALLED,
  PLATFORM_UNKNOWN_APP,
  PLATFORM_UNKNOWN_STORE,
  type Platform,
  PlatformError,
  startPlatform,
} from '../../src/platform/index.js';
import { postToken, REDIRECT, WEBHOOK } from './helpers.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform.close();
});

function newApp() {
  return platform.registerApp({
    name: 'Seeded app',
    redirectUri: REDIRECT,
    webhookUrl: WEBHOOK,
    scopes: ['read_products', 'read_store_settings'],
  });
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    return (err as PlatformError).code;
  }
  return undefined;
}

describe('platform.installMany', () => {
  it('installs the app on every store with working, refreshable token pairs', async () => {
    const app = newApp();
    const ids = [1, 2, 3].map(() => platform.createStore({ seed: false }).storeId);
    const issued = platform.installMany({ clientId: app.clientId, storeIds: ids });
    expect(issued.map((t) => t.storeId)).toEqual(ids);
    expect(issued[0]?.scope).toBe('read_products,read_store_settings');
    for (const t of issued) {
      const res = await fetch(`${platform.apiUrl}/stores/current`, {
        headers: { authorization: `Bearer ${t.access_token}`, 'x-store-id': t.storeId },
      });
      expect(res.status).toBe(200);
    }
    const before = platform.stats().tokenRequests.refresh_token;
    const res = await postToken(platform, {
      grant_type: 'refresh_token',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      refresh_token: String(issued[1]?.refresh_token),
    });
    expect(res.status).toBe(200);
    expect(platform.stats().tokenRequests.refresh_token).toBe(before + 1);
  });

  it('grants only the scopes asked for, and a second install revokes the first pair', async () => {
    const app = newApp();
    const { storeId } = platform.createStore({ seed: false });
    const [first] = platform.installMany({
      clientId: app.clientId,
      storeIds: [storeId],
      scopes: ['read_products'],
    });
    expect(first?.scope).toBe('read_products');
    platform.installMany({ clientId: app.clientId, storeIds: [storeId] });
    const res = await fetch(`${platform.apiUrl}/stores/current`, {
      headers: { authorization: `Bearer ${first?.access_token}`, 'x-store-id': storeId },
    });
    expect(res.status).toBe(401);
  });

  it('refuses an unknown app, an unknown store or a scope the app did not register, installing nothing', () => {
    const app = newApp();
    const { storeId } = platform.createStore({ seed: false });
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(codeOf(() => platform.installMany({ clientId: 'nope', storeIds: [storeId] }))).toBe(
      PLATFORM_UNKNOWN_APP,
    );
    expect(
      codeOf(() => platform.installMany({ clientId: app.clientId, storeIds: [storeId, unknown] })),
    ).toBe(PLATFORM_UNKNOWN_STORE);
    expect(
      codeOf(() =>
        platform.installMany({
          clientId: app.clientId,
          storeIds: [storeId],
          scopes: ['write_orders'],
        }),
      ),
    ).toBe(PLATFORM_INVALID_APP);
    // Validation comes first: the known store of the refused batches was not installed.
    expect(codeOf(() => platform.uninstall({ clientId: app.clientId, storeId }))).toBe(
      PLATFORM_NOT_INSTALLED,
    );
  });
});
