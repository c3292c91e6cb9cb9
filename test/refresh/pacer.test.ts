/**
 * The sweep's concurrency (src/refresh/pacer.ts): up when refreshes land
 * late, down when the token endpoint pushes back, never outside its bounds.
 */
import { describe, expect, it } from 'vitest';
import { CONFIG_INVALID, ConfigError } from '../../src/errors/index.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';
import { createSweepPacer } from '../../src/refresh/pacer.js';

const BEHIND = 150_000;

describe('sweep pacer', () => {
  it('keeping up (tokens refreshed with more than half the window left) keeps the minimum', () => {
    const p = createSweepPacer({ min: 8, max: 64, behindMs: BEHIND });
    for (let i = 0; i < 1_000; i++) p.landed(200_000);
    expect(p.limit()).toBe(8);
  });

  it('behind, it doubles once per round of landings, up to the maximum', () => {
    const p = createSweepPacer({ min: 8, max: 64, behindMs: BEHIND });
    for (let i = 0; i < 7; i++) p.landed(60_000);
    expect(p.limit()).toBe(8);
    p.landed(60_000);
    expect(p.limit()).toBe(16);
    for (let i = 0; i < 16 + 32; i++) p.landed(60_000);
    expect(p.limit()).toBe(64);
    for (let i = 0; i < 1_000; i++) p.landed(1_000);
    expect(p.limit()).toBe(64);
  });

  it('the token endpoint pushing back (Retry-After, 5xx) halves it, never below the minimum', () => {
    const p = createSweepPacer({ min: 8, max: 64, behindMs: BEHIND });
    for (let i = 0; i < 8 + 16 + 32; i++) p.landed(0);
    expect(p.limit()).toBe(64);
    p.pushback();
    expect(p.limit()).toBe(32);
    // The round starts again: one late landing does not undo the pushback.
    p.landed(0);
    expect(p.limit()).toBe(32);
    for (let i = 0; i < 10; i++) p.pushback();
    expect(p.limit()).toBe(8);
  });

  it('max equal to min turns adapting off', () => {
    const p = createSweepPacer({ min: 4, max: 4, behindMs: BEHIND });
    for (let i = 0; i < 100; i++) p.landed(0);
    expect(p.limit()).toBe(4);
  });
});

describe('refresh.sweepMaxConcurrency', () => {
  it('defaults to 64, above the default sweepConcurrency 8', () => {
    const o = resolveRefreshOptions({});
    expect([o.sweepConcurrency, o.sweepMaxConcurrency]).toEqual([8, 64]);
  });

  it('below sweepConcurrency fails at start, naming the setting and the fix', () => {
    let err: unknown;
    try {
      resolveRefreshOptions({ sweepConcurrency: 16, sweepMaxConcurrency: 8 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe(CONFIG_INVALID);
    expect((err as ConfigError).setting).toBe('refresh.sweepMaxConcurrency');
  });
});
