/**
 * Issue 24: a sweep that keeps up. One pass refreshes every due store (not a
 * fixed batch), several at once, paced by the token endpoint's Retry-After;
 * instances sharing a database share the work (each store refreshed once).
 * Against the local platform over real sockets, SQLite storage.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { requestToken } from '../../src/oauth/token-endpoint.js';
import type { PlatformOptions } from '../../src/platform/index.js';
import { createTokenManager, type RefreshCall } from '../../src/refresh/manager.js';
import { type RefreshOptions, resolveRefreshOptions } from '../../src/refresh/options.js';
import { createFixture, type Fixture } from '../client/setup.js';

let fx: Fixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

/** A platform + database of its own with `n` installed stores, and a kit clock that follows the platform's. */
async function setup(n: number, platform?: PlatformOptions) {
  let offset = 0;
  const clock = () => Date.now() + offset;
  fx = await createFixture({ now: clock, platform });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await fx.install()).storeId);
  const f = fx;
  return {
    fx: f,
    ids,
    clock,
    /** Moves both clocks: every token now expires in `leftSeconds` (250 s: inside the 300 s window). */
    makeDue(leftSeconds = 250) {
      f.platform.advanceClock(86_400 - leftSeconds);
      offset += (86_400 - leftSeconds) * 1000;
    },
    /** A token manager whose refresh calls go to the platform, observed. */
    manager(
      refresh: RefreshOptions,
      observe?: (phase: 'start' | 'end', at: number) => void,
      logger?: RecordingLogger,
    ) {
      const call: RefreshCall = async (rt, signal) => {
        observe?.('start', Date.now());
        try {
          return await requestToken(
            {
              url: `${f.platform.authUrl}/oauth/token`,
              clientId: f.clientId,
              clientSecret: f.clientSecret,
              encoding: 'json',
            },
            { grant_type: 'refresh_token', refresh_token: rt },
            { signal },
          );
        } finally {
          observe?.('end', Date.now());
        }
      };
      return createTokenManager({
        installations: f.storage.installations,
        options: resolveRefreshOptions({ sweepIntervalMs: 0, ...refresh }),
        refresh: call,
        now: clock,
        logger,
      });
    },
  };
}

/** Records what the manager logs, by level. */
interface RecordingLogger {
  debug(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
  lines: { level: string; obj: Record<string, unknown>; msg: string }[];
}
function recordingLogger(): RecordingLogger {
  const lines: RecordingLogger['lines'] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) => {
    lines.push({ level, obj, msg });
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), lines };
}

describe('sweep pass', () => {
  it('refreshes every due store in one pass, whatever the batch size', async () => {
    const s = await setup(40);
    s.makeDue();
    const tokens = s.manager({ sweepBatchSize: 7 });
    const result = await tokens.sweep();
    expect(result.refreshed).toBe(40);
    expect(result.failed).toBe(0);
    expect(s.fx.refreshCalls()).toBe(40);
    // Nothing is due any more.
    expect(
      await s.fx.storage.installations.listExpiringBefore(new Date(s.clock() + 300_000), 100),
    ).toEqual([]);
  });

  it('runs sweepConcurrency refreshes at once, never more', async () => {
    const s = await setup(24);
    s.makeDue();
    let inFlight = 0;
    let most = 0;
    const tokens = s.manager({ sweepConcurrency: 4 }, (phase) => {
      inFlight += phase === 'start' ? 1 : -1;
      most = Math.max(most, inFlight);
    });
    const result = await tokens.sweep();
    expect(result.refreshed).toBe(24);
    expect(most).toBe(4);
  });

  it('behind schedule (tokens with less than half the window left), it runs more at once, up to sweepMaxConcurrency', async () => {
    const s = await setup(40);
    // 100 s left of the 300 s window: the pass is late and must catch up.
    s.makeDue(100);
    let inFlight = 0;
    let most = 0;
    const tokens = s.manager({ sweepConcurrency: 2, sweepMaxConcurrency: 8 }, (phase) => {
      inFlight += phase === 'start' ? 1 : -1;
      most = Math.max(most, inFlight);
    });
    const result = await tokens.sweep();
    expect(result.refreshed).toBe(40);
    expect(s.fx.refreshCalls()).toBe(40);
    expect(most).toBeGreaterThan(2);
    expect(most).toBeLessThanOrEqual(8);
  });

  it('keeping up (more than half the window left), it stays at sweepConcurrency', async () => {
    const s = await setup(24);
    s.makeDue(250);
    let inFlight = 0;
    let most = 0;
    const tokens = s.manager({ sweepConcurrency: 2, sweepMaxConcurrency: 8 }, (phase) => {
      inFlight += phase === 'start' ? 1 : -1;
      most = Math.max(most, inFlight);
    });
    expect((await tokens.sweep()).refreshed).toBe(24);
    expect(most).toBe(2);
  });

  it('three instances on one database: every store refreshed exactly once, lost leases counted', async () => {
    const s = await setup(45);
    s.makeDue();
    const instances = [1, 2, 3].map(() => s.manager({ sweepConcurrency: 4, sweepBatchSize: 10 }));
    const results = await Promise.all(instances.map((t) => t.sweep()));
    const sum = (k: 'refreshed' | 'failed' | 'leaseLost') => results.reduce((n, r) => n + r[k], 0);
    expect(s.fx.refreshCalls()).toBe(45);
    expect(sum('refreshed')).toBe(45);
    expect(sum('failed')).toBe(0);
    // Shared: more than one instance did some of the work.
    expect(results.filter((r) => r.refreshed > 0).length).toBeGreaterThan(1);
    expect(sum('leaseLost')).toBeGreaterThanOrEqual(0);
  });

  it('does not put swept stores into the request cache', async () => {
    const s = await setup(5);
    // A cache age longer than the clock jump below, so only the sweep changes the entry.
    const tokens = s.manager({ cacheTtlMs: 2 * 86_400_000 });
    const [cached, ...rest] = s.ids as [string, ...string[]];
    await tokens.getInstallation(cached); // served a request: cached
    s.makeDue();
    await tokens.sweep();
    // The cached copy is replaced by the refreshed one; the others stay out of memory.
    expect(tokens.cachedInstallation(cached)?.accessTokenExpiresAt.getTime()).toBeGreaterThan(
      s.clock() + 86_000_000,
    );
    for (const id of rest) expect(tokens.cachedInstallation(id)).toBeUndefined();
  });

  it('a token issued for less than the window is refreshed once per pass, not again and again', async () => {
    const s = await setup(6, { accessTokenTtlSeconds: 120 });
    const tokens = s.manager({ windowSeconds: 300 });
    const result = await tokens.sweep();
    expect(result.refreshed).toBe(6);
    expect(s.fx.refreshCalls()).toBe(6);
  });
});

describe('what the sweep logs', () => {
  it('a background pass that refreshed stores writes one info line with its counts; each refresh is a debug line', async () => {
    const s = await setup(12);
    s.makeDue();
    const log = recordingLogger();
    const tokens = s.manager({ sweepIntervalMs: 20, sweepBatchSize: 5 }, undefined, log);
    tokens.startSweep();
    for (let i = 0; i < 500 && !log.lines.some((l) => l.obj.event === 'refresh.sweep'); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    // Further passes find nothing due: they log nothing.
    await new Promise((r) => setTimeout(r, 100));
    await tokens.stopSweep();
    expect(s.fx.refreshCalls()).toBe(12);
    const info = log.lines.filter((l) => l.level === 'info');
    expect(info).toHaveLength(1);
    expect(info[0]?.obj).toMatchObject({ event: 'refresh.sweep', refreshed: 12, failed: 0 });
    expect(info[0]?.obj.durationMs).toEqual(expect.any(Number));
    expect(info[0]?.msg).toBe('Token sweep pass: 12 refreshed, 0 failed.');
    const perStore = log.lines.filter((l) => l.msg === 'Access token refreshed.');
    expect(perStore.map((l) => l.level)).toEqual(Array(12).fill('debug'));
    expect(new Set(perStore.map((l) => l.obj.storeId))).toEqual(new Set(s.ids));
  });
});

describe('pacing against the token endpoint', () => {
  it("waits out the token endpoint's Retry-After before any further refresh call", async () => {
    const s = await setup(6);
    s.makeDue();
    s.fx.platform.setFaults({ token: { rateLimitRate: 1, retryAfterSeconds: 2, count: 1 } });
    const starts: number[] = [];
    const tokens = s.manager({ sweepConcurrency: 1 }, (phase, at) => {
      if (phase === 'start') starts.push(at);
    });
    const result = await tokens.sweep();
    expect(result.refreshed).toBe(6);
    expect(result.failed).toBe(0);
    // The first call got the 429; the next one went no sooner than 2 s later.
    expect(starts.length).toBe(7);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(1990);
  });

  it('a Retry-After longer than a refresh may wait fails the pass fast, and stopSweep ends its wait', async () => {
    const s = await setup(3);
    s.makeDue();
    s.fx.platform.setFaults({ token: { rateLimitRate: 1, retryAfterSeconds: 600 } });
    const tokens = s.manager({ sweepIntervalMs: 10, sweepConcurrency: 1 });
    tokens.startSweep();
    // Wait until the first pass has met the 429.
    for (let i = 0; i < 300 && s.fx.platform.faultStats().rateLimited === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 200));
    await tokens.stopSweep();
    // One call met the 429; no call went during the 600 s it asked for.
    expect(s.fx.platform.faultStats().rateLimited).toBe(1);
    expect(s.fx.refreshCalls()).toBe(0);
  });
});
