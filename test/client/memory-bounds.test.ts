/**
 * Issue 24: no per-store structure grows with the number of installed stores.
 * Each bound is an option; the least recently used store goes first, a store
 * with work under way is never dropped, and a purged store goes at once.
 * Against the local platform over real sockets, SQLite storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionTokens } from '../../src/authenticated/session-token.js';
import { createClientFactory } from '../../src/client/factory.js';
import { resolveClientOptions } from '../../src/client/options.js';
import { createTokenManager } from '../../src/refresh/manager.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';
import type { Installation } from '../../src/storage/types.js';
import { createFixture, type Fixture } from './setup.js';

let fx: Fixture;
const stores: Installation[] = [];

beforeAll(async () => {
  fx = await createFixture({ rateLimit: { concurrent: 50, perMinute: 100_000 } });
  for (let i = 0; i < 5; i++) stores.push(await fx.install());
});
afterAll(async () => {
  await fx?.close();
});

/** A token manager whose database reads are counted per store. */
function countedManager(cacheMaxStores: number) {
  const reads = new Map<string, number>();
  const tokens = createTokenManager({
    installations: {
      ...fx.storage.installations,
      get: (id: string) => {
        reads.set(id, (reads.get(id) ?? 0) + 1);
        return fx.storage.installations.get(id);
      },
    },
    options: resolveRefreshOptions({ cacheMaxStores, sweepIntervalMs: 0 }),
    refresh: async () => {
      throw new Error('no refresh expected');
    },
  });
  return { tokens, reads: (id: string) => reads.get(id) ?? 0 };
}

describe('installation cache bound (refresh.cacheMaxStores)', () => {
  it('keeps at most cacheMaxStores installations and drops the least recently used', async () => {
    const [a, b, c] = stores.map((s) => s.storeId) as [string, string, string];
    const { tokens, reads } = countedManager(2);
    await tokens.getInstallation(a);
    await tokens.getInstallation(b);
    await tokens.getInstallation(a); // a is now the most recently used
    expect(reads(a)).toBe(1);
    await tokens.getInstallation(c); // evicts b, not a
    expect(tokens.cachedInstallation(a)).toBeDefined();
    expect(tokens.cachedInstallation(c)).toBeDefined();
    expect(tokens.cachedInstallation(b)).toBeUndefined();
    await tokens.getInstallation(b); // read again from the database
    expect(reads(b)).toBe(2);
    expect(reads(a)).toBe(1);
  });

  it('a purged (invalidated) store is dropped at once; an uninstalled one on its next load', async () => {
    const extra = await fx.install();
    const { tokens } = countedManager(10);
    await tokens.getInstallation(extra.storeId);
    tokens.invalidate(extra.storeId);
    expect(tokens.cachedInstallation(extra.storeId)).toBeUndefined();
    await tokens.getInstallation(extra.storeId);
    await fx.storage.purge(extra.storeId, { tables: [] });
    await expect(tokens.reload(extra.storeId)).rejects.toMatchObject({ code: 'NOT_INSTALLED' });
    expect(tokens.cachedInstallation(extra.storeId)).toBeUndefined();
  });

  it('refuses a bound below 1 at start, naming the option', () => {
    expect(() => resolveRefreshOptions({ cacheMaxStores: 0 })).toThrow(/refresh\.cacheMaxStores/);
    expect(() => resolveClientOptions({ cacheMaxStores: -1 })).toThrow(/client\.cacheMaxStores/);
  });
});

describe('clients and rate-limit gates (client.cacheMaxStores)', () => {
  function factory(cacheMaxStores: number, extra: Record<string, unknown> = {}) {
    const { tokens } = countedManager(100);
    return createClientFactory({
      options: resolveClientOptions({ baseUrl: fx.platform.apiUrl, cacheMaxStores, ...extra }),
      tokens,
    });
  }

  it('holds at most cacheMaxStores idle gates after every store made a call', async () => {
    const f = factory(2);
    for (const s of stores) await f.forStore(s.storeId).store.current();
    expect(f.limiter.size).toBe(2);
    // The client of an evicted store is rebuilt and works.
    const first = stores[0]!.storeId;
    expect((await f.forStore(first).store.current()).id).toBe(first);
  });

  it('never drops the gate of a store with a call in flight (one gate, one concurrency cap)', async () => {
    const f = factory(1, { maxConcurrent: 1 });
    const [a, b] = stores.map((s) => s.storeId) as [string, string];
    fx.platform.setFaults({ api: { latencyMs: 300, count: 1 } });
    const slow = f.forStore(a).store.current(); // holds a's only slot for 300 ms
    await new Promise((r) => setTimeout(r, 50));
    await f.forStore(b).store.current(); // over the bound: a's gate is busy, so it stays
    const gate = f.limiter.forStore(a);
    expect(gate.snapshot().inFlight).toBe(1);
    const second = f.forStore(a).store.current();
    await new Promise((r) => setTimeout(r, 20));
    // The same gate queues the second call behind the first (maxConcurrent 1).
    expect(gate.snapshot().queued).toBe(1);
    await Promise.all([slow, second]);
    fx.platform.setFaults(undefined);
  });
});

describe('remembered session tokens (authenticated.rememberedTokens)', () => {
  it('remembers at most rememberedTokens verified tokens, least recently used forgotten first', async () => {
    const issuer = createSessionTokens({
      secrets: ['s'.repeat(32)],
      clientId: 'client',
      issuer: 'http://127.0.0.1:1',
      ttlSeconds: 300,
      clockToleranceSeconds: 5,
      rememberedTokens: 2,
    });
    const minted = await Promise.all(
      stores
        .slice(0, 3)
        .map((s) => issuer.mint(s.storeId, { installedAt: s.installedAt.getTime() })),
    );
    const [t1, t2, t3] = minted.map((m) => m.token) as [string, string, string];
    await issuer.verifySession(t1);
    await issuer.verifySession(t2);
    expect(issuer.rememberedSession?.(t1)?.session).toBeDefined(); // t1 used: t2 is the oldest
    await issuer.verifySession(t3);
    expect(issuer.rememberedSession?.(t2)?.session).toBeUndefined();
    expect(issuer.rememberedSession?.(t1)?.session.storeId).toBe(stores[0]!.storeId);
    expect(issuer.rememberedSession?.(t3)?.session.storeId).toBe(stores[2]!.storeId);
    // A forgotten token is still valid: it is verified again.
    expect((await issuer.verifySession(t2)).storeId).toBe(stores[1]!.storeId);
  });
});
