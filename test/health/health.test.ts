/**
 * The opt-in health endpoint: off by default, the report over real sockets
 * on a SQLite file (database, pending purges, last refresh failure), 503 when
 * the database (SQLite or Postgres) is closed or hangs, one database query for a flood of probes,
 * and nothing in it that names a store, a token, a URL or an error message.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { resolveConfig } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import type { ConfigError } from '../../src/errors/index.js';
import { createHealthCheck, HEALTH_DB_TIMEOUT, type HealthReport } from '../../src/health/index.js';
import { createStorage } from '../../src/storage/index.js';
import type { PendingPurge } from '../../src/storage/types.js';
import { configProblem, validEnv } from '../helpers/config.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

/** The detail of the route is behind this bearer token (issue 23 §6). */
const OPS_TOKEN = 'ops-token-0123456789abcdefghij';
const ops = { headers: { authorization: `Bearer ${OPS_TOKEN}` } };
const dir = mkdtempSync(join(tmpdir(), 'sak-health-'));
let pg: TempDatabase | undefined;
let maria: TempDatabase | undefined;
afterAll(async () => {
  await pg?.drop();
  await maria?.drop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

async function install(h: Harness): Promise<void> {
  const browser = new Browser();
  const authorizeUrl = await begin(h, browser);
  const cb = await browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
  expect(cb.status).toBe(302);
}

describe('health endpoint on a kit', () => {
  it('is off by default: no route is mounted', async () => {
    const h = await startHarness({ databaseUrl: join(dir, 'off.db') });
    try {
      const res = await fetch(`${h.appUrl}/healthz`);
      expect(res.status).toBe(404);
      // The report is still there for an app that mounts its own route.
      expect((await h.kit.health()).status).toBe('ok');
    } finally {
      await h.close();
    }
  });

  describe('with health: { path }', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await startHarness({
        databaseUrl: join(dir, 'on.db'),
        kit: {
          health: { path: '/ops/health', cacheMs: 0, token: OPS_TOKEN },
          refresh: { maxAttempts: 1 },
        },
      });
      await install(h);
    });
    afterAll(async () => {
      await h?.close();
    });

    it('reports a reachable database, no pending purge and no refresh failure, as JSON 200', async () => {
      const res = await fetch(`${h.appUrl}/ops/health`, ops);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('set-cookie')).toBeNull();
      const body = (await res.json()) as HealthReport;
      expect(body).toEqual({
        status: 'ok',
        checkedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        database: { status: 'up', latencyMs: expect.any(Number), error: null, reason: null },
        purges: { pending: 0, oldestAgeSeconds: null, failing: 0 },
        refresh: { lastFailure: null, pendingWrites: 0 },
      });
    });

    it('reports pending purges and the last refresh failure without naming the store, a token or a URL', async () => {
      const gone = randomUUID();
      await internalsOf(h.kit).storage.pendingPurges.add({
        eventId: `evt_${randomUUID()}`,
        storeId: gone,
        eventAt: new Date(),
      });
      await internalsOf(h.kit).storage.pendingPurges.recordFailure(
        (await internalsOf(h.kit).storage.pendingPurges.list())[0]!.eventId,
        new Date(Date.now() + 3_600_000),
        'STORAGE_UNAVAILABLE',
      );
      // The platform's token endpoint is down when the token expires.
      h.platform.setFaults({ token: { errorRate: 1, errorStatus: 503 } });
      h.platform.advanceClock(86_400 + 60);
      try {
        await expect(h.kit.client(h.storeId).products.list()).rejects.toMatchObject({
          code: 'REFRESH_UNAVAILABLE',
        });
      } finally {
        h.platform.setFaults(undefined);
      }

      const res = await fetch(`${h.appUrl}/ops/health`, ops);
      expect(res.status).toBe(200);
      const text = await res.text();
      const body = JSON.parse(text) as HealthReport;
      expect(body.purges).toEqual({ pending: 1, oldestAgeSeconds: expect.any(Number), failing: 1 });
      expect(body.refresh.lastFailure).toEqual({
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        code: 'REFRESH_UNAVAILABLE',
      });
      const inst = (await h.kit.installations.get(h.storeId))!;
      for (const leak of [
        h.storeId,
        gone,
        inst.accessToken,
        inst.refreshToken!,
        h.clientSecret,
        h.platform.authUrl,
        '127.0.0.1',
        'health.db',
        'token endpoint',
      ]) {
        expect(text).not.toContain(leak);
      }
    });

    it('health flood: 200 concurrent probes cost one database query', async () => {
      const flood = await startHarness({
        databaseUrl: join(dir, 'flood.db'),
        platform: h.platform,
        kit: { health: { cacheMs: 60_000 } },
      });
      try {
        const list = vi.spyOn(internalsOf(flood.kit).storage.pendingPurges, 'list');
        const answers = await Promise.all(
          Array.from({ length: 200 }, () => fetch(`${flood.appUrl}/healthz`)),
        );
        expect(answers.every((r) => r.status === 200)).toBe(true);
        expect(list).toHaveBeenCalledTimes(1);
      } finally {
        await flood.close();
      }
    });
  });
});

describe('createHealthCheck', () => {
  const pendingAt = (createdAt: Date, lastError: string | null = null): PendingPurge => ({
    eventId: `evt_${randomUUID()}`,
    storeId: randomUUID(),
    eventAt: createdAt,
    createdAt,
    attempts: lastError ? 1 : 0,
    nextAttemptAt: createdAt,
    lastError,
    kind: 'purge',
  });

  it('ages the oldest pending purge on its clock and reuses a report for cacheMs', async () => {
    let now = Date.parse('2026-11-24T06:00:00Z');
    const rows = [
      pendingAt(new Date(now - 90_000), 'SQLITE_BUSY'),
      pendingAt(new Date(now - 5_000)),
    ];
    const list = vi.fn(async () => rows);
    const check = createHealthCheck({
      pendingPurges: { list },
      lastRefreshFailure: () => null,
      options: { dbTimeoutMs: 1000, cacheMs: 1000 },
      now: () => now,
    });
    const first = await check.report();
    expect(first.purges).toEqual({ pending: 2, oldestAgeSeconds: 90, failing: 1 });
    now += 999;
    expect(await check.report()).toBe(first);
    expect(list).toHaveBeenCalledTimes(1);
    now += 1;
    const second = await check.report();
    expect(second.purges?.oldestAgeSeconds).toBe(91);
    expect(list).toHaveBeenCalledTimes(2);
  });

  it.each([
    ['SQLite', async () => join(dir, 'closed.db')],
    [
      'Postgres',
      async () => {
        pg = await createTempDatabase('sak_health');
        return pg.url;
      },
    ],
    [
      'MariaDB',
      async () => {
        maria = await createTempMysqlDatabase('sak_health');
        return maria.url;
      },
    ],
  ])('answers 503 with only an error code when the %s database is closed', async (_name, url) => {
    const storage = await createStorage({
      databaseUrl: await url(),
      encryptionKeys: [generateKey()],
    });
    const check = createHealthCheck({
      pendingPurges: storage.pendingPurges,
      lastRefreshFailure: () => null,
      options: { dbTimeoutMs: 1000, cacheMs: 0, detail: 'public' },
    });
    expect((await check.report()).status).toBe('ok');
    await storage.close();
    const report = await check.report();
    expect(report.status).toBe('unavailable');
    expect(report.purges).toBeNull();
    expect(report.database.status).toBe('down');
    expect(report.database.error).toMatch(/^[A-Za-z0-9_.]{1,64}$/);
    const sent = await respond(check);
    expect(sent.status).toBe(503);
    expect(sent.body).toMatchObject({
      status: 'unavailable',
      database: report.database,
      purges: null,
    });
    expect(JSON.stringify(sent.body)).not.toMatch(/closed\.db|connection|open/i);
  });

  it('counts a database that does not answer within dbTimeoutMs as down (503)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const check = createHealthCheck({
      pendingPurges: { list: () => new Promise<never>(() => undefined) },
      lastRefreshFailure: () => null,
      options: { dbTimeoutMs: 250, cacheMs: 0 },
    });
    const pending = check.report();
    await vi.advanceTimersByTimeAsync(250);
    const report = await pending;
    expect(report.status).toBe('unavailable');
    expect(report.database).toEqual({
      status: 'down',
      latencyMs: null,
      error: HEALTH_DB_TIMEOUT,
      reason: 'timeout',
    });
  });
});

describe('health options', () => {
  const ENV = validEnv();
  const problem = (options: object): ConfigError => configProblem(options, ENV);

  it('defaults to no route; a bad path, a path another kit route uses, a bad timeout or an unknown key fails at start naming the option', () => {
    expect(resolveConfig({}, ENV).health).toEqual({
      path: null,
      dbTimeoutMs: 1000,
      cacheMs: 1000,
      detail: 'guarded',
    });
    expect(resolveConfig({ health: {} }, ENV).health.path).toBe('/healthz');
    expect(problem({ health: { path: 'healthz' } }).setting).toBe('health.path');
    expect(problem({ health: { dbTimeoutMs: 0 } }).setting).toBe('health.dbTimeoutMs');
    const clash = problem({ health: { path: '/webhooks' } });
    expect(clash.setting).toBe('health.path');
    expect(clash.message).toContain('webhooks.path');
    expect(problem({ health: { path: '/auth/callback' } }).message).toContain('auth.callbackPath');
    // The kit's one matching rule (case, one trailing slash) could not tell them apart either.
    expect(problem({ health: { path: '/WebHooks/' } }).message).toContain('webhooks.path');
    const webhooksOnAuth = problem({ webhooks: { path: '/Auth' } });
    expect(webhooksOnAuth.setting).toBe('webhooks.path');
    expect(webhooksOnAuth.message).toContain('auth.path');
    const typo = problem({ health: { pth: '/h' } });
    expect(typo.setting).toBe('health.pth');
    expect(typo.message).toContain('`health.path`');
  });
});

/** Runs the route handler (the core handler both shells mount) and returns what it answers. */
async function respond(
  check: ReturnType<typeof createHealthCheck>,
): Promise<{ status: number; body: unknown }> {
  const r = await check.coreHandler()({ header: () => undefined } as never);
  return { status: r.status, body: r.body.kind === 'json' ? r.body.value : undefined };
}
