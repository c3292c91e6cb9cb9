/**
 * Rate-limit pacing (unit, fake timers: a whole window in milliseconds of test
 * time) and the per-store concurrency cap (against the local platform).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRateLimiter } from '../../src/client/ratelimit.js';
import { createFixture, type Fixture } from './setup.js';

function headers(limit: number, remaining: number, resetSeconds: number): Headers {
  return new Headers({
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(resetSeconds),
  });
}

describe('pacing (fake clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('spreads the remaining budget over the window and waits for the reset when spent', async () => {
    vi.useFakeTimers();
    const start = Math.ceil(Date.now() / 60_000) * 60_000; // a window boundary
    vi.setSystemTime(start);
    const gate = createRateLimiter({ maxConcurrent: 1000, pacing: true }).forStore('s');
    gate.observe(headers(120, 120, start / 1000 + 60));
    const sentAt: number[] = [];
    const callers = Array.from({ length: 130 }, async () => {
      const release = await gate.acquire();
      sentAt.push(Date.now() - start);
      release();
    });
    await vi.advanceTimersByTimeAsync(125_000);
    await Promise.all(callers);
    const inFirstWindow = sentAt.filter((t) => t < 60_000).length;
    // The whole budget is used in the first window, never more.
    expect(inFirstWindow).toBe(120);
    // Not all at once: the first second gets at most a second's worth plus the burst.
    expect(sentAt.filter((t) => t < 1000).length).toBeLessThanOrEqual(6);
    // The rest waited for the reset instead of tripping a 429.
    expect(sentAt.filter((t) => t >= 60_000)).toHaveLength(10);
    expect(Math.min(...sentAt.filter((t) => t >= 60_000))).toBeGreaterThanOrEqual(60_000);
  });

  it('waits for the reset when the budget is spent, then starts the next window', async () => {
    vi.useFakeTimers();
    const start = Math.ceil(Date.now() / 60_000) * 60_000 + 30_000; // mid-window
    vi.setSystemTime(start);
    const gate = createRateLimiter({ maxConcurrent: 10, pacing: true }).forStore('s');
    gate.observe(headers(10, 0, (start + 30_000) / 1000));
    let sentAt = -1;
    void gate.acquire().then((r) => {
      sentAt = Date.now() - start;
      r();
    });
    await vi.advanceTimersByTimeAsync(29_000);
    expect(sentAt).toBe(-1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(sentAt).toBeGreaterThanOrEqual(30_000);
    expect(gate.snapshot().remaining).toBe(9);
  });

  it('takes the lower count when other processes share the budget', () => {
    const gate = createRateLimiter({ maxConcurrent: 10, pacing: true }).forStore('s');
    const reset = Math.floor(Date.now() / 1000) + 30;
    gate.observe(headers(1000, 900, reset));
    gate.observe(headers(1000, 40, reset));
    gate.observe(headers(1000, 800, reset)); // a late response from earlier: ignored
    expect(gate.snapshot().remaining).toBe(40);
  });

  it('honours a 429 block for this store only', async () => {
    vi.useFakeTimers();
    const limiter = createRateLimiter({ maxConcurrent: 10, pacing: true });
    limiter.forStore('a').block(5000);
    let aAt = -1;
    let bAt = -1;
    const t0 = Date.now();
    const a = limiter
      .forStore('a')
      .acquire()
      .then((r) => {
        aAt = Date.now() - t0;
        r();
      });
    const b = limiter
      .forStore('b')
      .acquire()
      .then((r) => {
        bAt = Date.now() - t0;
        r();
      });
    await vi.advanceTimersByTimeAsync(6000);
    await Promise.all([a, b]);
    expect(bAt).toBe(0);
    expect(aAt).toBeGreaterThanOrEqual(5000);
  });

  it('copes with a platform clock far from ours', async () => {
    vi.useFakeTimers();
    const now = Date.now();
    const gate = createRateLimiter({ maxConcurrent: 10, pacing: true }).forStore('s');
    // The platform's clock runs a day ahead (tests advance it): the reset is "tomorrow".
    gate.observe(headers(60, 60, Math.floor(now / 1000) + 86_400 + 30));
    const snap = gate.snapshot();
    expect(snap.windowEnd! - now).toBeLessThanOrEqual(60_000);
    let done = false;
    void gate.acquire().then((r) => {
      done = true;
      r();
    });
    await vi.advanceTimersByTimeAsync(2000);
    expect(done).toBe(true);
  });
});

describe('concurrency cap (local platform)', () => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await createFixture({ rateLimit: { concurrent: 4 } });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('keeps a store within its burst so the platform never answers 429', async () => {
    const inst = await fx.install({ seed: 3 });
    const statuses: number[] = [];
    const counting: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    };
    const client = fx
      .runtime({ client: { maxConcurrent: 4, fetch: counting } })
      .client(inst.storeId);
    const results = await Promise.all(
      Array.from({ length: 60 }, () => client.products.list({ limit: 1 })),
    );
    expect(results).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(0);
  });

  it('without the cap, 429s are retried and every call still succeeds', async () => {
    const inst = await fx.install({ seed: 3 });
    const statuses: number[] = [];
    const counting: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    };
    const client = fx
      .runtime({ client: { maxConcurrent: 40, fetch: counting, retries: { max: 8 } } })
      .client(inst.storeId);
    const results = await Promise.all(
      Array.from({ length: 40 }, () => client.products.list({ limit: 1 })),
    );
    expect(results).toHaveLength(40);
    expect(statuses.filter((s) => s === 200)).toHaveLength(40);
  });
});
