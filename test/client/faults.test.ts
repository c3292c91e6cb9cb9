/**
 * The client against the local platform's fault injection (5xx, connections
 * reset mid-body, 429 storms, a failing token endpoint), over real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreApiError } from '../../src/client/errors.js';
import { createFixture, type Fixture } from './setup.js';

let fx: Fixture;
beforeAll(async () => {
  fx = await createFixture({ rateLimit: { concurrent: 500, perMinute: 100_000 } });
});
afterAll(async () => {
  await fx?.close();
});

describe('platform faults', () => {
  it('GETs survive 5xx, mid-body resets and 429s through retries', async () => {
    const inst = await fx.install({ seed: 3 });
    const client = fx
      .runtime({ client: { retries: { max: 8, baseDelayMs: 1, maxDelayMs: 2000 } } })
      .client(inst.storeId);
    fx.platform.setFaults({
      seed: 7,
      api: { errorRate: 0.25, resetRate: 0.15, rateLimitRate: 0.03, retryAfterSeconds: 1 },
    });
    try {
      for (let i = 0; i < 20; i++) {
        const page = await client.products.list({ limit: 2 });
        expect(page.data).toHaveLength(2);
      }
      const counts = fx.platform.faultStats();
      expect(JSON.stringify(counts)).not.toBe('{}');
    } finally {
      fx.platform.setFaults(undefined);
    }
  });

  it('a POST cut mid-response is not retried: one product, one typed error', async () => {
    const inst = await fx.install();
    const client = fx
      .runtime({ client: { retries: { max: 8, baseDelayMs: 1 } } })
      .client(inst.storeId);
    fx.platform.setFaults({ api: { resetRate: 1 } });
    let err: unknown;
    try {
      err = await client.products.create({ name: 'Once' }).catch((e: unknown) => e);
    } finally {
      fx.platform.setFaults(undefined);
    }
    // Cut before or after the headers: either way a typed error, and no second POST.
    expect(err).toBeInstanceOf(StoreApiError);
    expect(['NETWORK_ERROR', 'RESPONSE_INVALID']).toContain((err as StoreApiError).code);
    const page = await client.products.list();
    expect(page.data.filter((p) => p.name === 'Once')).toHaveLength(1);
  });

  it('a token endpoint that fails answers REFRESH_UNAVAILABLE, then recovers', async () => {
    const inst = await fx.install();
    const { client } = fx.runtime({ refresh: { maxAttempts: 2, baseDelayMs: 1 } });
    const c = client(inst.storeId);
    await c.store.current();
    fx.platform.advanceClock(86_400 + 60);
    fx.platform.setFaults({ token: { errorRate: 1 } });
    const err = await c.products.list().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REFRESH_UNAVAILABLE', status: 503 });
    fx.platform.setFaults(undefined);
    const page = await c.products.list({ limit: 1 });
    expect(Array.isArray(page.data)).toBe(true);
    expect((await fx.storage.installations.get(inst.storeId))!.needsReauth).toBe(false);
  });
});
