/**
 * Rate-limit pacing: the gate's model on a fake clock (a whole window in
 * milliseconds of test time), then the client against the local platform over
 * real sockets: clock jumps (advanceClock), in-flight accounting on a short
 * platform window, Retry-After in seconds, POSTs after a 429, concurrency cap.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RateLimitedError } from '../../src/client/errors.js';
import { createStoreGate } from '../../src/client/ratelimit.js';
import { createFixture, type Fixture } from './setup.js';

function headers(limit: number, remaining: number, resetSeconds: number, dateMs = Date.now()) {
  return new Headers({
    date: new Date(dateMs).toUTCString(),
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(resetSeconds),
  });
}

/** A platform's fixed-window counter on the (fake) clock, answering each send. */
function fakePlatform(limit: number, windowMs = 60_000, offsetMs = 0) {
  let window = -1;
  let count = 0;
  let refused = 0;
  return {
    answer(): Headers {
      const now = Date.now() + offsetMs;
      const w = Math.floor(now / windowMs);
      if (w !== window) {
        window = w;
        count = 0;
      }
      count++;
      if (count > limit) refused++;
      return headers(limit, Math.max(0, limit - count), ((w + 1) * windowMs) / 1000, now);
    },
    refused: () => refused,
  };
}

describe('pacing model (fake clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('spreads the budget over the window, never overdraws it, and continues after the reset', async () => {
    vi.useFakeTimers();
    const start = Math.ceil(Date.now() / 60_000) * 60_000; // a window boundary
    vi.setSystemTime(start);
    const gate = createStoreGate(1000, true);
    const platform = fakePlatform(120);
    const sentAt: number[] = [];
    const callers = Array.from({ length: 130 }, async () => {
      const slot = await gate.acquire();
      sentAt.push(Date.now() - start);
      await new Promise((r) => setTimeout(r, 5)); // the request's round trip
      slot.release(platform.answer());
    });
    await vi.advanceTimersByTimeAsync(125_000);
    await Promise.all(callers);
    expect(platform.refused()).toBe(0);
    // The whole budget of the first window is used, and not all at once.
    expect(sentAt.filter((t) => t < 60_000)).toHaveLength(120);
    expect(sentAt.filter((t) => t < 1000).length).toBeLessThanOrEqual(6);
    expect(sentAt.filter((t) => t >= 60_000)).toHaveLength(10);
  });

  it('four processes on one budget converge on their shares: no overdraw, budget used', async () => {
    vi.useFakeTimers();
    const start = Math.ceil(Date.now() / 60_000) * 60_000;
    vi.setSystemTime(start);
    const platform = fakePlatform(1000);
    // Separate gates = separate processes; they only meet in the platform's count.
    const gates = Array.from({ length: 4 }, () => createStoreGate(50, true));
    let sent = 0;
    const perGate = [0, 0, 0, 0];
    const end = start + 120_000;
    const callers = gates.flatMap((gate, g) =>
      Array.from({ length: 25 }, async () => {
        while (Date.now() < end) {
          const slot = await gate.acquire();
          if (Date.now() >= end) {
            slot.release();
            break;
          }
          sent++;
          perGate[g] = (perGate[g] ?? 0) + 1;
          // A slow round trip (a loaded machine): the other processes' requests in
          // flight are invisible to each gate until they land.
          await new Promise((r) => setTimeout(r, 300));
          slot.release(platform.answer());
        }
      }),
    );
    await vi.advanceTimersByTimeAsync(125_000);
    await Promise.all(callers);
    expect(platform.refused()).toBe(0);
    expect(sent).toBeGreaterThanOrEqual(0.9 * 2000);
    // Nobody starves (an even split is 25% each; the split converges towards it).
    for (const n of perGate) expect(n).toBeGreaterThanOrEqual(0.15 * sent);
  });

  it('lets one probe out until the first response says what the window holds', async () => {
    vi.useFakeTimers();
    const gate = createStoreGate(50, true);
    const granted: Array<{ release(h?: Headers): void }> = [];
    for (let i = 0; i < 5; i++) void gate.acquire().then((s) => granted.push(s));
    await vi.advanceTimersByTimeAsync(50);
    expect(granted).toHaveLength(1);
    expect(gate.snapshot().mode).toBe('probe');
    granted[0]?.release(headers(1000, 999, Math.floor(Date.now() / 1000) + 30));
    await vi.advanceTimersByTimeAsync(50);
    expect(granted).toHaveLength(5);
    expect(gate.snapshot().mode).toBe('paced');
  });

  it('reads the reset in the platform clock: a platform a day ahead moves the window, not the wait', async () => {
    vi.useFakeTimers();
    const now = Date.now();
    const ahead = now + 86_400_000;
    const gate = createStoreGate(10, true);
    (await gate.acquire()).release(headers(60, 59, Math.floor(ahead / 1000) + 30, ahead));
    const end = gate.snapshot().windowEnd as number;
    expect(end - now).toBeGreaterThan(28_000);
    expect(end - now).toBeLessThanOrEqual(32_000);
    let done = false;
    void gate.acquire().then((s) => {
      done = true;
      s.release();
    });
    await vi.advanceTimersByTimeAsync(2000);
    expect(done).toBe(true);
  });

  it('falls back to reactive handling when the headers are implausible (reset an hour away)', async () => {
    vi.useFakeTimers();
    const gate = createStoreGate(50, true);
    (await gate.acquire()).release(headers(10, 0, Math.floor(Date.now() / 1000) + 3600));
    expect(gate.snapshot().mode).toBe('reactive');
    const slots = await Promise.all(Array.from({ length: 20 }, () => gate.acquire()));
    expect(slots).toHaveLength(20);
  });

  it('re-checks every queued caller after a 429: nobody goes before Retry-After', async () => {
    vi.useFakeTimers();
    const start = Date.now();
    const gate = createStoreGate(100, true);
    (await gate.acquire()).release(headers(1000, 999, Math.floor(start / 1000) + 50));
    const sentAt: number[] = [];
    const callers = Array.from({ length: 20 }, () =>
      gate.acquire().then((s) => {
        sentAt.push(Date.now() - start);
        s.release();
      }),
    );
    await vi.advanceTimersByTimeAsync(0);
    const before = sentAt.length;
    gate.block(5000);
    await vi.advanceTimersByTimeAsync(10_000);
    await Promise.all(callers);
    expect(sentAt.slice(before).every((t) => t >= 5000)).toBe(true);
    expect(sentAt).toHaveLength(20);
  });

  it('refuses at once a caller who will not wait as long as the store is held', async () => {
    const gate = createStoreGate(10, true);
    gate.block(30_000);
    const err = await gate.acquire(undefined, 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfter).toBe(30);
  });
});

describe('against the local platform', () => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await createFixture();
  });
  afterAll(async () => {
    await fx?.close();
  });

  function counting() {
    const statuses: number[] = [];
    const fetchCounting: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    };
    return { statuses, fetch: fetchCounting };
  }

  it('after a platform clock jump past the token expiry, 20 concurrent calls refresh exactly once', async () => {
    const inst = await fx.install({ seed: 2 });
    const c = counting();
    const { client } = fx.runtime({ client: { fetch: c.fetch } });
    const store = client(inst.storeId);
    await store.products.list({ limit: 1 }); // the client now knows the current window
    const refreshes = fx.refreshCalls();
    fx.platform.advanceClock(86_400 + 90);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.products.list({ limit: 1 })),
    );
    expect(results.every((r) => r.data.length === 1)).toBe(true);
    expect(fx.refreshCalls()).toBe(refreshes + 1);
    expect(c.statuses.filter((s) => s === 429)).toHaveLength(0);
  });

  it('40 callers through two +24 h jumps: every call returns', async () => {
    const inst = await fx.install({ seed: 2 });
    const { client } = fx.runtime();
    const store = client(inst.storeId);
    const refreshes = fx.refreshCalls();
    let ok = 0;
    // The second jump waits until every caller has finished its first two calls: a
    // call whose replay (after the first refresh) crossed the second jump would see
    // its fresh token expire too, which no real token lifetime allows, and the
    // client rightly refreshes only once per call.
    let arrived = 0;
    let resume!: () => void;
    const barrier = new Promise<void>((r) => {
      resume = r;
    });
    const callers = Array.from({ length: 40 }, async () => {
      let waited = false;
      try {
        for (let i = 0; i < 4; i++) {
          if (i === 2) {
            waited = true;
            arrived++;
            await barrier;
          }
          await store.products.list({ limit: 1 });
          ok++;
        }
      } finally {
        // A caller that failed early still counts, so the barrier cannot hang the test.
        if (!waited) arrived++;
      }
    });
    // The first jump lands while calls are under way, at a point in the run rather
    // than in wall time, so a slow machine cannot finish every call before it.
    const jumps = (async () => {
      while (ok < 20) await new Promise((r) => setTimeout(r, 2));
      fx.platform.advanceClock(86_400);
      while (arrived < 40) await new Promise((r) => setTimeout(r, 2));
      fx.platform.advanceClock(86_400);
      resume();
    })();
    // allSettled: a caller that fails must not leave the others running into the next test.
    const settled = await Promise.allSettled([...callers, jumps]);
    expect(settled.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(ok).toBe(160);
    // Both jumps pass the token's expiry with calls still to make: one refresh for each.
    expect(fx.refreshCalls() - refreshes).toBe(2);
  });

  it('honours Retry-After in seconds', async () => {
    const inst = await fx.install({ seed: 1 });
    const times: Array<{ at: number; status: number }> = [];
    const timed: typeof fetch = async (url, init) => {
      times.push({ at: Date.now(), status: 0 });
      const res = await fetch(url, init);
      times.push({ at: Date.now(), status: res.status });
      return res;
    };
    const { client } = fx.runtime({ client: { fetch: timed } });
    fx.platform.setFaults({ api: { rateLimitRate: 1, retryAfterSeconds: 2, count: 1 } });
    try {
      const page = await client(inst.storeId).products.list({ limit: 1 });
      expect(page.data).toHaveLength(1);
    } finally {
      fx.platform.setFaults(undefined);
    }
    const at429 = times.findIndex((t) => t.status === 429);
    expect(at429).toBeGreaterThanOrEqual(0);
    const answered429 = times[at429];
    // The first send after the 429 in event order: on a fast machine the refused request's
    // own send and its 429 can carry the same millisecond.
    const nextSend = times.slice(at429 + 1).find((t) => t.status === 0);
    expect(nextSend).toBeDefined();
    // 2 s, not 2 ms and not 2 minutes.
    expect((nextSend?.at ?? 0) - (answered429?.at ?? 0)).toBeGreaterThanOrEqual(1990);
    expect((nextSend?.at ?? 0) - (answered429?.at ?? 0)).toBeLessThan(10_000);
  });

  it('never repeats a POST after a 429 that might have been applied', async () => {
    const inst = await fx.install();
    const c = counting();
    const { client } = fx.runtime({ client: { fetch: c.fetch } });
    const store = client(inst.storeId);
    // A 429 without the rate limiter's headers (a gateway in front, say): maybe applied.
    fx.platform.setFaults({ api: { rateLimitRate: 1, retryAfterSeconds: 0, count: 1 } });
    let err: unknown;
    try {
      err = await store.products.create({ name: 'Only once' }).catch((e: unknown) => e);
    } finally {
      fx.platform.setFaults(undefined);
    }
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ code: 'rate_limited', mayHaveBeenApplied: true });
    expect(c.statuses).toEqual([429]);
    const page = await store.products.list();
    expect(page.data.filter((p) => p.name === 'Only once')).toHaveLength(0);
  });
});

describe('in-flight accounting (platform window of 3 s)', () => {
  let fx: Fixture;
  const N = 20;
  beforeAll(async () => {
    fx = await createFixture({
      platform: { rateLimitWindowSeconds: 3 },
      rateLimit: { perMinute: N, concurrent: 50 },
    });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('a window of N with 2N concurrent calls sees no 429', async () => {
    const inst = await fx.install({ seed: 1 });
    const statuses: number[] = [];
    const counting: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    };
    const { client } = fx.runtime({ client: { fetch: counting } });
    const store = client(inst.storeId);
    const results = await Promise.all(
      Array.from({ length: 2 * N }, () => store.products.list({ limit: 1 })),
    );
    expect(results).toHaveLength(2 * N);
    expect(statuses.filter((s) => s === 429)).toHaveLength(0);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2 * N);
  });
});

describe('POST after the rate limiter refused it (5 per window)', () => {
  let fx: Fixture;
  beforeAll(async () => {
    fx = await createFixture({ rateLimit: { perMinute: 5, concurrent: 50 } });
  });
  afterAll(async () => {
    await fx?.close();
  });

  it('is retried after Retry-After, and each product is created exactly once', async () => {
    const inst = await fx.install();
    const statuses: number[] = [];
    const counting: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      statuses.push(res.status);
      return res;
    };
    // Pacing off so that the platform's limiter, not the client, stops the burst.
    const { client } = fx.runtime({ client: { fetch: counting, pacing: false } });
    const store = client(inst.storeId);
    // Move the platform to ~3 s before its window ends (clock control instead of waiting).
    const probe = await fetch(`${fx.platform.apiUrl}/products`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
    });
    const reset = Number(probe.headers.get('x-ratelimit-reset'));
    const date = Date.parse(probe.headers.get('date') ?? '') / 1000;
    fx.platform.advanceClock(reset - date - 3);
    const created = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.products.create({ name: `P${i}` })),
    );
    expect(created).toHaveLength(8);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const all = await store.products.list({ limit: 250 });
    expect(all.data.map((p) => p.name).sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `P${i}`).sort(),
    );
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
