/**
 * Automatic refresh in one process, against the local platform over real
 * sockets with real SQLite storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReauthorizationRequiredError, TokenRevokedError } from '../../src/client/errors.js';
import { createTokenManager } from '../../src/refresh/manager.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';
import { createFixture, type Fixture } from '../client/setup.js';

let fx: Fixture;
/** Our clock follows the platform's when a test moves both. */
let offsetMs = 0;
const now = () => Date.now() + offsetMs;
function advance(seconds: number) {
  fx.platform.advanceClock(seconds);
  offsetMs += seconds * 1000;
}

beforeAll(async () => {
  fx = await createFixture({ rateLimit: { concurrent: 500, perMinute: 100_000 }, now });
});
afterAll(async () => {
  await fx?.close();
});

describe('reactive refresh', () => {
  it('50 concurrent calls after expiry cause exactly one refresh and all succeed', async () => {
    const inst = await fx.install({ seed: 2 });
    const { client } = fx.runtime();
    const c = client(inst.storeId);
    await c.store.current(); // warm: the installation is now cached in memory
    // Only the platform's clock moves: it rejects the token our clock still thinks valid.
    fx.platform.advanceClock(86_400 + 60);
    const before = fx.refreshCalls();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => c.products.list({ limit: 1 })),
    );
    expect(results).toHaveLength(50);
    expect(fx.refreshCalls() - before).toBe(1);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(inst.version + 1);
    expect(stored!.accessToken).not.toBe(inst.accessToken);
    expect(stored!.refreshToken).not.toBe(inst.refreshToken); // rotated and kept
    offsetMs += (86_400 + 60) * 1000;
  });
});

describe('proactive refresh', () => {
  it('never hands out a token inside the window: refreshes first, once', async () => {
    const inst = await fx.install();
    const { tokens, client } = fx.runtime({ now, refresh: { windowSeconds: 300 } });
    await client(inst.storeId).store.current();
    advance(86_400 - 200); // 200 s left: inside the 300 s window
    const before = fx.refreshCalls();
    const got = await Promise.all(
      Array.from({ length: 20 }, () => tokens.getAccessToken(inst.storeId)),
    );
    expect(new Set(got).size).toBe(1);
    expect(got[0]).not.toBe(inst.accessToken);
    expect(fx.refreshCalls() - before).toBe(1);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.accessTokenExpiresAt.getTime()).toBeGreaterThan(now() + 86_000_000);
  });

  it('a valid cached token reads neither the platform nor the database', async () => {
    const inst = await fx.install();
    let reads = 0;
    const counted = {
      ...fx.storage.installations,
      get: (id: string) => {
        reads++;
        return fx.storage.installations.get(id);
      },
    };
    const tokens = createTokenManager({
      installations: counted,
      options: resolveRefreshOptions(),
      refresh: async () => {
        throw new Error('must not refresh');
      },
      now,
    });
    await tokens.getAccessToken(inst.storeId);
    const before = fx.refreshCalls();
    for (let i = 0; i < 100; i++) await tokens.getAccessToken(inst.storeId);
    expect(reads).toBe(1);
    expect(fx.refreshCalls()).toBe(before);
  });
});

describe('refresh responses and failures', () => {
  it('keeps the old refresh token and scopes and assumes 86400 s when fields are missing', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      scopes: inst.scopes,
      accessToken: inst.accessToken,
      refreshToken: inst.refreshToken,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const tokens = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions(),
      refresh: async () => ({ accessToken: 'new-access', scopeMissing: true }),
      now,
    });
    const got = await tokens.getInstallation(inst.storeId);
    expect(got.accessToken).toBe('new-access');
    expect(got.refreshToken).toBe(inst.refreshToken);
    expect(got.scopes).toEqual(inst.scopes);
    const lifetime = got.accessTokenExpiresAt.getTime() - now();
    expect(lifetime).toBeGreaterThan(86_390_000);
    expect(lifetime).toBeLessThanOrEqual(86_400_000);
  });

  it.each([
    ['absurd', 1e13],
    ['negative', -5],
    ['string', '3600'],
  ])('assumes 86400 s for an %s expires_in', async (_kind, expiresIn) => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const tokens = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions(),
      refresh: async () => ({ accessToken: 'a', expiresIn: expiresIn as number }),
      now,
    });
    const got = await tokens.getInstallation(inst.storeId);
    const lifetime = got.accessTokenExpiresAt.getTime() - now();
    expect(lifetime).toBeGreaterThan(86_390_000);
    expect(lifetime).toBeLessThanOrEqual(86_400_000);
  });

  it('invalid_grant marks the installation and surfaces ReauthorizationRequiredError', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      scopes: inst.scopes,
      accessToken: inst.accessToken,
      refreshToken: 'not-a-real-refresh-token',
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const { client } = fx.runtime({ now });
    const err = await client(inst.storeId)
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReauthorizationRequiredError);
    expect((err as ReauthorizationRequiredError).code).toBe('REAUTHORIZATION_REQUIRED');
    expect((await fx.storage.installations.get(inst.storeId))!.needsReauth).toBe(true);
  });

  it('invalid_grant racing a reinstall keeps the reinstall usable', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const { OAuthError } = await import('../../src/oauth/errors.js');
    const tokens = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions(),
      refresh: async () => {
        // The merchant reinstalls while our refresh is on the wire; the old grant is gone.
        await fx.storage.installations.upsert(inst.storeId, {
          scopes: inst.scopes,
          accessToken: 'from-reinstall',
          refreshToken: 'r-reinstall',
          accessTokenExpiresAt: new Date(now() + 86_400_000),
        });
        throw new OAuthError('invalid_grant', 'refused', { status: 400 });
      },
      now,
    });
    const got = await tokens.getInstallation(inst.storeId);
    expect(got.accessToken).toBe('from-reinstall');
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.needsReauth).toBe(false);
    expect(stored!.accessToken).toBe('from-reinstall');
  });

  it('retries a failing token endpoint with backoff, then succeeds', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    let calls = 0;
    const { OAuthError } = await import('../../src/oauth/errors.js');
    const tokens = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions({ baseDelayMs: 1, maxAttempts: 3 }),
      refresh: async () => {
        calls++;
        if (calls < 3) {
          throw new OAuthError('TOKEN_ENDPOINT_UNAVAILABLE', 'down', { retryable: true });
        }
        return {
          accessToken: 'after-retries',
          refreshToken: 'r2',
          expiresIn: 3600,
          scopes: ['read_products'],
        };
      },
      now,
    });
    const got = await tokens.getInstallation(inst.storeId);
    expect(calls).toBe(3);
    expect(got.accessToken).toBe('after-retries');
    expect(got.scopes).toEqual(['read_products']);
  });
});

describe('crash safety', () => {
  it('a process that dies mid-refresh holding the lease does not lock the store out', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const { requestToken } = await import('../../src/oauth/token-endpoint.js');
    const endpoint = {
      url: `${fx.platform.authUrl}/oauth/token`,
      clientId: fx.clientId,
      clientSecret: fx.clientSecret,
      encoding: 'json' as const,
    };
    const realRefresh = (refreshToken: string) =>
      requestToken(endpoint, { grant_type: 'refresh_token', refresh_token: refreshToken });
    const options = resolveRefreshOptions({ leaseMs: 200, pollIntervalMs: 20 });
    // Process A: the platform rotates the tokens, then A dies before committing them.
    let died!: () => void;
    const dead = new Promise<void>((r) => {
      died = r;
    });
    const a = createTokenManager({
      installations: fx.storage.installations,
      options,
      refresh: async (rt) => {
        await realRefresh(rt);
        died();
        return new Promise(() => {
          /* the process is gone */
        });
      },
      now,
    });
    void a.getInstallation(inst.storeId);
    await dead;
    // Process B waits out A's lease, refreshes with the stored (old) refresh token inside the
    // platform's grace period, and commits before anyone uses the result.
    const b = fx.runtime({ now, refresh: { leaseMs: 200, pollIntervalMs: 20 } });
    const before = fx.refreshCalls();
    const page = await b.client(inst.storeId).products.list({ limit: 1 });
    expect(page.data).toBeInstanceOf(Array);
    expect(fx.refreshCalls() - before).toBe(1);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.needsReauth).toBe(false);
    expect(stored!.version).toBeGreaterThan(inst.version + 1);
    expect(stored!.accessToken).not.toBe(inst.accessToken);
  });
});

describe('a token response with wrong types', () => {
  it('is refused with REFRESH_UNAVAILABLE, stores nothing, and frees the lease', async () => {
    const inst = await fx.install();
    await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessTokenExpiresAt: new Date(now() + 10_000),
    });
    const stored = await fx.storage.installations.get(inst.storeId);
    let answer: unknown = { accessToken: 42 };
    const tokens = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions(),
      refresh: async () => answer as { accessToken: string },
      now,
    });
    await expect(tokens.getInstallation(inst.storeId)).rejects.toMatchObject({
      code: 'REFRESH_UNAVAILABLE',
      status: 503,
    });
    const after = await fx.storage.installations.get(inst.storeId);
    expect(after!.version).toBe(stored!.version);
    expect(after!.accessToken).toBe(inst.accessToken);
    answer = { accessToken: 'good', expiresIn: 3600 };
    expect((await tokens.getInstallation(inst.storeId)).accessToken).toBe('good');
  });
});

describe('token_revoked', () => {
  it('flags the installation once (needs reauth, data kept) and throws TokenRevokedError', async () => {
    const inst = await fx.install();
    const flagged: string[] = [];
    const { client } = fx.runtime({
      now,
      onRevoked: (storeId) => {
        flagged.push(storeId);
      },
    });
    const c = client(inst.storeId);
    await c.store.current();
    fx.platform.revokeTokens({ storeId: inst.storeId, clientId: fx.clientId });
    const errs = await Promise.all(
      Array.from({ length: 5 }, () => c.products.list().catch((e: unknown) => e)),
    );
    for (const e of errs) expect(e).toBeInstanceOf(TokenRevokedError);
    expect(flagged).toEqual([inst.storeId]);
    expect(await fx.storage.installations.get(inst.storeId)).toMatchObject({ needsReauth: true });
    // Later calls: a typed error with a stable code, no platform call.
    await expect(c.products.list()).rejects.toBeInstanceOf(ReauthorizationRequiredError);
  });

  it('a late token_revoked for the old grant does not flag a reinstall (replays instead)', async () => {
    const inst = await fx.install();
    const purged: string[] = [];
    const { client } = fx.runtime({
      now,
      onRevoked: (storeId) => {
        purged.push(storeId);
      },
    });
    const c = client(inst.storeId);
    await c.store.current(); // this process now holds the old token in memory
    // Uninstall (old grant revoked) and reinstall, handled by another process.
    fx.platform.revokeTokens({ storeId: inst.storeId, clientId: fx.clientId });
    const again = await fx.install({ storeId: inst.storeId });
    const page = await c.products.list({ limit: 1 });
    expect(Array.isArray(page.data)).toBe(true);
    expect(purged).toEqual([]);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.accessToken).toBe(again.accessToken);
    expect(stored!.needsReauth).toBe(false);
  });

  it('does not flag a reinstall that replaced the revoked token', async () => {
    const inst = await fx.install();
    const purged: string[] = [];
    const { client, tokens } = fx.runtime({
      now,
      onRevoked: (storeId) => {
        purged.push(storeId);
      },
    });
    await client(inst.storeId).store.current();
    expect(await tokens.revoked(inst.storeId, 'an-older-token')).toBe(false);
    expect(purged).toEqual([]);
  });
});

describe('background sweep', () => {
  it('keeps an idle store working past its token lifetime', async () => {
    const inst = await fx.install();
    const { tokens, client } = fx.runtime({ now, refresh: { sweepIntervalMs: 0 } });
    advance(86_400 - 250); // idle for most of a day: within the window now
    const before = fx.refreshCalls();
    const swept = await tokens.sweep();
    expect(swept.refreshed).toBeGreaterThanOrEqual(1);
    expect(fx.refreshCalls() - before).toBeGreaterThanOrEqual(1);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(inst.version + 1);
    advance(600); // the original token would have expired by now
    const again = fx.refreshCalls();
    const page = await client(inst.storeId).products.list({ limit: 1 });
    expect(Array.isArray(page.data)).toBe(true);
    expect(fx.refreshCalls()).toBe(again); // no refresh on the request path
  });

  it('two processes sweeping the same store: one refresh, counted once', async () => {
    // Its own platform and database, so no other test's store is due as well.
    let offset = 0;
    const clock = () => Date.now() + offset;
    const own = await createFixture({ now: clock });
    try {
      const inst = await own.install();
      own.platform.advanceClock(86_400 - 250);
      offset += (86_400 - 250) * 1000;
      const a = own.runtime({ now: clock, refresh: { sweepIntervalMs: 0 } });
      const b = own.runtime({ now: clock, refresh: { sweepIntervalMs: 0 } });
      const [ra, rb] = await Promise.all([a.tokens.sweep(), b.tokens.sweep()]);
      expect(own.refreshCalls()).toBe(1);
      expect(ra.refreshed + rb.refreshed).toBe(1);
      expect(ra.failed + rb.failed).toBe(0);
      const stored = await own.storage.installations.get(inst.storeId);
      expect(stored!.version).toBe(inst.version + 1);
    } finally {
      await own.close();
    }
  });

  it('startSweep runs on an unref timer and stopSweep ends it', async () => {
    const { tokens } = fx.runtime({ now, refresh: { sweepIntervalMs: 20 } });
    tokens.startSweep();
    await new Promise((r) => setTimeout(r, 60));
    await tokens.stopSweep();
  });
});
