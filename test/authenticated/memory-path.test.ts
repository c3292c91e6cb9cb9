/**
 * The in-memory path of `authenticated()` (`createMemoryAuthenticate`) builds a store
 * context's parts once per remembered token and installation, and reuses them only
 * while the installation cache holds that same installation: a reinstall, a grant that
 * lost a scope, a purge or a refresh is seen on the next request. Each request still
 * gets a store object of its own, and what is kept never holds a purged store's
 * installation (its decrypted tokens) alive. A real token issuer; the installation cache
 * and the clients are the test's, so each change is made exactly.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryAuthenticate, createSessionTokens } from '../../src/authenticated/index.js';
import type { StoreApiClient } from '../../src/client/index.js';
import type { Installation } from '../../src/storage/types.js';

const STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
const INSTALLED_AT = 1_700_000_000_000;

function installation(over: Partial<Installation> = {}): Installation {
  return {
    storeId: STORE,
    scopes: ['read_products'],
    accessToken: 'at',
    refreshToken: 'rt',
    accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
    installedAt: new Date(INSTALLED_AT),
    updatedAt: new Date(),
    version: 1,
    needsReauth: false,
    ...over,
  } as Installation;
}

async function setup() {
  const sessionTokens = createSessionTokens({
    secrets: ['s'.repeat(32)],
    clientId: 'app',
    issuer: 'https://app.example',
    ttlSeconds: 300,
    clockToleranceSeconds: 0,
  });
  const cache = new Map<string, Installation>([[STORE, installation()]]);
  const built: StoreApiClient[] = [];
  /** A memory path over the shared issuer and cache, with a client factory of its own. */
  const memoryPath = (label: string) =>
    createMemoryAuthenticate({
      sessionTokens,
      tokens: { cachedInstallation: (id) => cache.get(id) },
      scopes: ['read_products'],
      client: (storeId) => {
        const client = { label, storeId } as unknown as StoreApiClient;
        built.push(client);
        return client;
      },
    });
  const { token } = await sessionTokens.mint(STORE, { installedAt: INSTALLED_AT });
  // Remembered once verified in full (the first request's path).
  await sessionTokens.verifySession(token);
  return { cache, built, memoryPath, bearer: `Bearer ${token}` };
}

describe('the in-memory path of authenticated()', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('gives each request a store object of its own, built from what the first one made', async () => {
    const { built, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    const first = fromMemory(bearer);
    const second = fromMemory(bearer);
    expect(first?.storeId).toBe(STORE);
    expect(second).toEqual(first);
    // An app that adds to its request's store object does not reach the next request's.
    expect(second).not.toBe(first);
    (first as unknown as Record<string, unknown>).note = 'request one';
    expect(fromMemory(bearer)).not.toHaveProperty('note');
    // The client was asked for once; every request reads the same one.
    expect(built).toHaveLength(1);
    expect(second?.client).toBe(built[0]);
    expect((await second!.sessionToken()).token).toEqual(expect.any(String));
  });

  it('a refreshed installation (a new object, the same installation) is served, from the new copy', async () => {
    const { cache, built, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    fromMemory(bearer);
    const refreshed = installation({
      accessToken: 'at2',
      version: 2,
      scopes: ['read_products', 'write_products'],
    });
    cache.set(STORE, refreshed);
    const store = fromMemory(bearer);
    expect(store?.scopes).toEqual(['read_products', 'write_products']);
    expect(built).toHaveLength(2);
  });

  it('attack: a token minted before a reinstall is not served from memory once the cache holds the new installation', async () => {
    const { cache, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    expect(fromMemory(bearer)).toBeDefined();
    // The same scopes array: only installedAt tells the new installation apart.
    const before = cache.get(STORE) as Installation;
    cache.set(STORE, { ...before, installedAt: new Date(INSTALLED_AT + 1) });
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it('a grant that lost a configured scope is not served from memory', async () => {
    const { cache, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    expect(fromMemory(bearer)).toBeDefined();
    // The same installedAt: only the scopes tell the narrower grant apart.
    const before = cache.get(STORE) as Installation;
    cache.set(STORE, { ...before, scopes: ['read_orders'] });
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it('attack: a purged store (no installation in memory) is not served from memory', async () => {
    const { cache, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    expect(fromMemory(bearer)).toBeDefined();
    cache.delete(STORE);
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it("attack: a purged store's installation (its decrypted tokens) is not kept alive by the remembered token", async () => {
    const { cache, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    expect(fromMemory(bearer)).toBeDefined();
    const held = new WeakRef(cache.get(STORE) as Installation);
    cache.delete(STORE);
    // A full collection (V8's gc, exposed for this test); a WeakRef's target survives the
    // job that last read it, hence the turns of the event loop.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    for (let i = 0; i < 3 && held.deref() !== undefined; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(held.deref()).toBeUndefined();
    // The token is still remembered; with no installation in memory it takes the full path.
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it('on a runtime without WeakRef (workerd without enable_weak_ref) it serves from memory as anywhere else', async () => {
    const { cache, built, memoryPath, bearer } = await setup();
    vi.stubGlobal('WeakRef', undefined);
    const fromMemory = memoryPath('workers');
    expect(fromMemory(bearer)?.storeId).toBe(STORE);
    expect(fromMemory(bearer)?.storeId).toBe(STORE);
    expect(built).toHaveLength(1);
    cache.set(STORE, installation({ installedAt: new Date(INSTALLED_AT + 1) }));
    expect(fromMemory(bearer)).toBeUndefined();
  });

  it('a token refresh (a new copy carrying the same installedAt and scopes) keeps what was built', async () => {
    const { cache, built, memoryPath, bearer } = await setup();
    const fromMemory = memoryPath('kit');
    fromMemory(bearer);
    const before = cache.get(STORE) as Installation;
    cache.set(STORE, { ...before, accessToken: 'at-refreshed', version: 2 });
    expect(fromMemory(bearer)?.scopes).toBe(before.scopes);
    expect(built).toHaveLength(1);
  });

  it('two memory paths over one token issuer each serve their own clients', async () => {
    const { memoryPath, bearer } = await setup();
    const a = memoryPath('a');
    const b = memoryPath('b');
    for (let i = 0; i < 2; i++) {
      expect(a(bearer)?.client).toMatchObject({ label: 'a' });
      expect(b(bearer)?.client).toMatchObject({ label: 'b' });
    }
  });
});
