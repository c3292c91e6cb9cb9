/**
 * The local platform's options are one valibot schema (src/platform/options.ts,
 * faults in src/platform/faults): a typo is an error with a suggestion, every
 * error names the option at fault and what to put there, and the defaults are
 * the documented ones.
 */
import { describe, expect, it } from 'vitest';
import {
  PLATFORM_INVALID_APP,
  PLATFORM_INVALID_OPTIONS,
  PlatformOptionsError,
  startPlatform,
} from '../../src/platform/index.js';
import { DEFAULT_PLATFORM_OPTIONS, resolvePlatformOptions } from '../../src/platform/options.js';
import { install, REDIRECT, WEBHOOK } from './helpers.js';

function problem(options: unknown): PlatformOptionsError {
  try {
    resolvePlatformOptions(options as never);
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformOptionsError);
    expect(err).toMatchObject({ code: PLATFORM_INVALID_OPTIONS });
    return err as PlatformOptionsError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('startPlatform options schema', () => {
  it('refuses unknown keys with "did you mean", at every level', () => {
    for (const [options, setting, suggestion] of [
      [{ prot: 4400 }, 'prot', '`port`'],
      [{ revokeOnCodeReplays: true }, 'revokeOnCodeReplays', '`revokeOnCodeReplay`'],
      [{ rateLimit: { concurent: 5 } }, 'rateLimit.concurent', '`rateLimit.concurrent`'],
      [{ faults: { api: { errorRat: 1 } } }, 'faults.api.errorRat', '`faults.api.errorRate`'],
      // A known option in the wrong place names where it belongs.
      [{ errorRate: 0.5 }, 'errorRate', '`faults.api.errorRate`'],
    ] as const) {
      const err = problem(options);
      expect(err.settings).toEqual([setting]);
      expect(err.message).toContain(`${setting}: is not an option`);
      expect(err.message).toContain(`did you mean ${suggestion}`);
    }
  });

  it('names each wrong value with what to put there, all problems in one error', () => {
    const err = problem({
      port: 70_000,
      codeTtlSeconds: 0,
      logger: 'yes',
      allowedHosts: ['http://devbox.local:8080'],
      webhookRetrySchedule: [5, -1],
      rateLimit: { perMinute: 0 },
      faults: { token: { errorStatus: 404 } },
    });
    // In the schema's order (the order of docs/platform.md's table).
    expect(err.problems).toEqual([
      'port: must be an integer from 0 to 65535.',
      'allowedHosts[0]: must be a host name (no scheme, no port), e.g. devbox.local.',
      'codeTtlSeconds: must be an integer of at least 1.',
      'rateLimit.perMinute: must be an integer of at least 1, or null for unlimited.',
      'webhookRetrySchedule[1]: must be a finite number of seconds, at least 0.',
      'logger: must be true, false or a pino logger instance.',
      'faults.token.errorStatus: must be an integer from 500 to 599.',
    ]);
    expect(err.settings).toEqual(err.problems.map((p) => p.slice(0, p.indexOf(':'))));
    expect(err.message).toMatch(/^startPlatform: 7 problems:\n {2}- port: /);
    // Never the value itself (an option may hold a secret).
    expect(err.message).not.toContain('devbox.local:8080');
  });

  it('fills the documented defaults (docs/platform.md, "Options of startPlatform")', () => {
    const d = resolvePlatformOptions();
    expect(d).toEqual(DEFAULT_PLATFORM_OPTIONS);
    expect(d).toMatchObject({
      port: 0,
      host: '127.0.0.1',
      allowedHosts: [],
      accessTokenTtlSeconds: 86_400,
      codeTtlSeconds: 60,
      revokeOnCodeReplay: false,
      refreshTokenTtlSeconds: 7_776_000,
      refreshTokenRotation: true,
      refreshGraceSeconds: 60,
      rateLimitWindowSeconds: 60,
      webhookRetrySchedule: [5, 30, 120, 600, 1800, 3600],
      webhookTimeoutMs: 10_000,
      logger: false,
    });
    expect(d.db).toBeUndefined(); // in memory
    expect(d.rateLimit).toBeUndefined(); // the tiers' limits
    expect(d.faults.routes).toEqual({});
    // Defaults are copies: mutating one resolution cannot change the next.
    (d.webhookRetrySchedule as number[]).push(1);
    expect(resolvePlatformOptions().webhookRetrySchedule).toHaveLength(6);
    // Read-only lists are accepted (typed so) and copied.
    const hosts = ['devbox.local'] as const;
    const resolved = resolvePlatformOptions({ allowedHosts: hosts, webhookRetrySchedule: [1, 2] });
    expect(resolved.allowedHosts).toEqual(['devbox.local']);
    expect(resolved.allowedHosts).not.toBe(hosts);
  });

  it('startPlatform rejects before listening; setFaults names faults.* and keeps the old faults', async () => {
    await expect(startPlatform({ prot: 1 } as never)).rejects.toThrow(/did you mean `port`/);
    const p = await startPlatform({ faults: { api: { errorRate: 1 } } });
    try {
      expect(() => p.setFaults({ api: { latencyMS: 10 } } as never)).toThrow(
        /^setFaults: faults\.api\.latencyMS: is not an option; did you mean `faults\.api\.latencyMs`\?$/,
      );
      expect(() => p.setFaults({ webhookDropRate: 2 })).toThrow(
        'setFaults: faults.webhookDropRate: must be a number from 0 to 1',
      );
      // The refused calls changed nothing: every API request still fails as configured.
      const inst = await install(p);
      const res = await fetch(`${p.apiUrl}/stores/current`, {
        headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
      });
      expect(res.status).toBe(503);
    } finally {
      await p.close();
    }
  });

  it("registerApp's rateLimit goes through the same schema (PLATFORM_INVALID_APP naming the field)", async () => {
    const p = await startPlatform();
    try {
      const base = {
        name: 'A',
        redirectUri: REDIRECT,
        webhookUrl: WEBHOOK,
        scopes: ['read_products'],
      };
      expect(() => p.registerApp({ ...base, rateLimit: { concurent: 3 } as never })).toThrow(
        expect.objectContaining({
          code: PLATFORM_INVALID_APP,
          message: expect.stringContaining(
            'rateLimit.concurent: is not an option; did you mean `rateLimit.concurrent`?',
          ),
        }),
      );
      const ok = p.registerApp({ ...base, rateLimit: { perMinute: null, concurrent: 3 } });
      expect(ok.clientId).toMatch(/^app_/);
    } finally {
      await p.close();
    }
  });
});
