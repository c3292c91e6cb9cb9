/**
 * The in-memory path of `authenticated()` over the real token manager: after the first
 * request it answers from its memo while the installation cache's ticket for that
 * installation stands, without looking the store up, and it sees everything that ends
 * the entry — an uninstall, a reinstall, the cache's age, the token window, eviction by
 * the bound — on the very next request. Real SQLite storage and the local platform.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryAuthenticate, createSessionTokens } from '../../src/authenticated/index.js';
import type { TokenManager } from '../../src/refresh/manager.js';
import type { RefreshOptions } from '../../src/refresh/options.js';
import type { Installation } from '../../src/storage/types.js';
import { createFixture, type Fixture } from '../client/setup.js';

let fx: Fixture;
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

beforeAll(async () => {
  fx = await createFixture({ now });
});
afterAll(async () => {
  await fx?.close();
});

const sessionTokens = createSessionTokens({
  secrets: ['s'.repeat(32)],
  clientId: 'app',
  issuer: 'https://app.example',
  ttlSeconds: 3600,
  clockToleranceSeconds: 0,
});

/** A memory path over a token manager, counting its look-ups of the installation cache. */
async function setup(refresh: RefreshOptions = {}, inst?: Installation) {
  const installed = inst ?? (await fx.install());
  const { tokens, client } = fx.runtime({ now, refresh });
  let lookUps = 0;
  const counted: TokenManager = {
    ...tokens,
    cachedInstallation: (id) => {
      lookUps++;
      return tokens.cachedInstallation(id);
    },
  };
  const fromMemory = createMemoryAuthenticate({
    sessionTokens,
    tokens: counted,
    client,
    scopes: ['read_products'],
  });
  const { token } = await sessionTokens.mint(installed.storeId, {
    installedAt: installed.installedAt.getTime(),
  });
  // The first request's full path: the token verified, the installation cached.
  await sessionTokens.verifySession(token);
  await tokens.getInstallation(installed.storeId);
  return {
    inst: installed,
    tokens,
    fromMemory,
    bearer: `Bearer ${token}`,
    lookUps: () => lookUps,
  };
}

describe('the in-memory path over the token manager', () => {
  it('answers from its memo without looking the store up while the cache entry stands', async () => {
    const { inst, fromMemory, bearer, lookUps } = await setup();
    expect(fromMemory(bearer)?.storeId).toBe(inst.storeId);
    expect(lookUps()).toBe(1);
    for (let i = 0; i < 50; i++) expect(fromMemory(bearer)?.storeId).toBe(inst.storeId);
    expect(lookUps()).toBe(1);
    // Each request still gets a store object of its own.
    expect(fromMemory(bearer)).not.toBe(fromMemory(bearer));
  });

  it('attack: an uninstall (the cache entry invalidated) is seen on the next request', async () => {
    const { inst, tokens, fromMemory, bearer } = await setup();
    expect(fromMemory(bearer)).toBeDefined();
    expect(fromMemory(bearer)).toBeDefined();
    tokens.invalidate(inst.storeId);
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it('attack: a token minted before a reinstall is refused once the new installation is cached', async () => {
    const { inst, tokens, fromMemory, bearer } = await setup();
    expect(fromMemory(bearer)).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later installedAt
    await fx.install({ storeId: inst.storeId });
    const fresh = await tokens.reload(inst.storeId);
    expect(fresh.installedAt.getTime()).not.toBe(inst.installedAt.getTime());
    expect(tokens.cachedInstallation(inst.storeId)).toBe(fresh);
    expect(fromMemory(bearer)).toBeUndefined();
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it("past the cache's age (`refresh.cacheTtlMs`) the memo is not used: the next request reloads", async () => {
    const { inst, tokens, fromMemory, bearer } = await setup({ cacheTtlMs: 60_000 });
    expect(fromMemory(bearer)).toBeDefined();
    expect(fromMemory(bearer)).toBeDefined();
    offsetMs += 61_000;
    try {
      expect(fromMemory(bearer)).toBeUndefined();
      // Reloaded by the full path: served from memory again.
      await tokens.getInstallation(inst.storeId);
      expect(fromMemory(bearer)?.storeId).toBe(inst.storeId);
    } finally {
      offsetMs -= 61_000;
    }
  });

  it('an access token inside the refresh window is not served from memory (the full path refreshes it)', async () => {
    const { inst, fromMemory, bearer } = await setup({ windowSeconds: 300 });
    expect(fromMemory(bearer)).toBeDefined();
    expect(fromMemory(bearer)).toBeDefined();
    const left = inst.accessTokenExpiresAt.getTime() - now();
    offsetMs += left - 200_000; // 200 s left: inside the 300 s window
    try {
      expect(fromMemory(bearer)).toBeUndefined();
    } finally {
      offsetMs -= left - 200_000;
    }
  });

  it('a store evicted from the cache by its bound (`refresh.cacheMaxStores`) takes the full path', async () => {
    const { tokens, fromMemory, bearer } = await setup({ cacheMaxStores: 1 });
    expect(fromMemory(bearer)).toBeDefined();
    expect(fromMemory(bearer)).toBeDefined();
    const other = await fx.install();
    await tokens.getInstallation(other.storeId); // the bound of one: the first store goes
    expect(fromMemory(bearer)).toBeUndefined();
  });
});
