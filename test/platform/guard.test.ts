import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClock } from '../../src/platform/clock.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { createRateLimiter, UNLIMITED_HEADER_VALUE } from '../../src/platform/ratelimit/index.js';
import { install } from './helpers.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform({ rateLimit: { perMinute: 5 } });
});
afterAll(async () => {
  await platform.close();
});

async function call(
  p: Platform,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(`${p.apiUrl}/stores/current`, { headers });
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json()) as Record<string, unknown>,
  };
}

function expectRateHeaders(h: Headers): void {
  expect(h.get('x-ratelimit-limit')).toMatch(/^\d+$/);
  expect(h.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
  expect(h.get('x-ratelimit-reset')).toMatch(/^\d{10}$/);
}

describe('guard in front of /api/v1', () => {
  it.each([
    ['no Authorization header', {}],
    ['a malformed Authorization header', { authorization: 'Token abc' }],
    ['an unknown token', { authorization: 'Bearer spat_unknown' }],
  ])(
    '%s → 401 invalid_token with the API error body and rate-limit headers',
    async (_n, headers) => {
      const res = await call(platform, {
        ...headers,
        'x-store-id': '00000000-0000-4000-8000-000000000000',
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: 'invalid_token', details: [] });
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expectRateHeaders(res.headers);
    },
  );

  it('missing X-Store-Id → 400 missing_store_id; another store → 403 store_mismatch', async () => {
    const inst = await install(platform);
    const missing = await call(platform, { authorization: `Bearer ${inst.accessToken}` });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      error: expect.any(String),
      code: 'missing_store_id',
      details: [],
    });
    expectRateHeaders(missing.headers);
    const other = platform.createStore().storeId;
    const mismatch = await call(platform, {
      authorization: `Bearer ${inst.accessToken}`,
      'x-store-id': other,
    });
    expect(mismatch.status).toBe(403);
    expect(mismatch.body['code']).toBe('store_mismatch');
    expectRateHeaders(mismatch.headers);
  });

  it('expired → 401 token_expired; uninstalled → 401 token_revoked at once', async () => {
    const inst = await install(platform);
    const h = { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId };
    expect((await call(platform, h)).status).toBe(200);
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const revoked = await call(platform, h);
    expect(revoked.status).toBe(401);
    expect(revoked.body).toEqual({ error: expect.any(String), code: 'token_revoked', details: [] });
    expect(revoked.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');

    const second = await install(platform);
    platform.advanceClock(86400);
    const expired = await call(platform, {
      authorization: `Bearer ${second.accessToken}`,
      'x-store-id': second.storeId,
    });
    expect(expired.status).toBe(401);
    expect(expired.body['code']).toBe('token_expired');
  });

  it('counts per app and store, answers 429 rate_limited with Retry-After, and resets with the window', async () => {
    const inst = await install(platform);
    const h = { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId };
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(platform, h);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      remaining.push(res.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const limited = await call(platform, h);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: expect.any(String), code: 'rate_limited', details: [] });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(limited.headers.get('x-ratelimit-reset'));
    expect(reset % 60).toBe(0);

    // Another store of the same app has its own bucket.
    const other = await install(platform);
    expect(
      (
        await call(platform, {
          authorization: `Bearer ${other.accessToken}`,
          'x-store-id': other.storeId,
        })
      ).status,
    ).toBe(200);

    platform.advanceClock(retryAfter);
    const after = await call(platform, h);
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-remaining')).toBe('4');
  });
});

describe('tiers', () => {
  it('applies the tier of the app and a per-app override', async () => {
    const p = await startPlatform();
    try {
      const limitOf = async (opts: Parameters<typeof install>[1]) => {
        const inst = await install(p, opts);
        const res = await call(p, {
          authorization: `Bearer ${inst.accessToken}`,
          'x-store-id': inst.storeId,
        });
        return res.headers.get('x-ratelimit-limit');
      };
      expect(await limitOf({})).toBe('1000');
      expect(await limitOf({ tier: 'partner' })).toBe('10000');
      expect(await limitOf({ tier: 'elite' })).toBe(String(UNLIMITED_HEADER_VALUE));
      expect(await limitOf({ tier: 'elite', rateLimit: { perMinute: 42 } })).toBe('42');
    } finally {
      await p.close();
    }
  });
});

describe('rate limiter', () => {
  it('refuses requests beyond the concurrency with Retry-After 1 until one ends', () => {
    const limiter = createRateLimiter(createClock());
    const limit = { perMinute: 100, concurrent: 2 };
    const a = limiter.admit('k', limit);
    const b = limiter.admit('k', limit);
    expect(a.ok && b.ok).toBe(true);
    const c = limiter.admit('k', limit);
    expect(c).toMatchObject({ ok: false, retryAfter: 1 });
    if (a.ok) a.release();
    if (a.ok) a.release(); // releasing twice frees one slot only
    expect(limiter.admit('k', limit).ok).toBe(true);
    expect(limiter.admit('k', limit).ok).toBe(false);
  });

  it('never refuses an unlimited per-minute limit', () => {
    const limiter = createRateLimiter(createClock());
    for (let i = 0; i < 2000; i++) {
      const r = limiter.admit('k', { perMinute: null, concurrent: 1 });
      expect(r.ok).toBe(true);
      if (r.ok) r.release();
    }
  });
});
