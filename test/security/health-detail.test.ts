/**
 * Issue 23 §6: the health route the template mounts (`health: { path:
 * '/healthz' }`) tells anyone only whether the app is alive; the detail
 * (database latency, purge counts, the last refresh failure) needs the
 * health token. A route that shows the detail to anyone is warned about at
 * start. Real servers over real sockets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/index.js';
import type { ConfigError } from '../../src/errors/index.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { configProblem, validEnv } from '../helpers/config.js';
import { type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-health-detail-'));
const TOKEN = 'health-token-0123456789-abcdefghij';

describe('health detail behind a guard (issue 23 §6)', () => {
  let platform: Platform;
  let h: Harness | undefined;
  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  afterAll(async () => {
    await platform?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (name: string, health: object) => {
    h = await startHarness({ databaseUrl: join(dir, `${name}.db`), platform, kit: { health } });
    return h;
  };

  it("the template's route (health: { path: '/healthz' }) answers anyone with liveness only, and warns about nothing", async () => {
    const app = await start('template', { path: '/healthz' });
    const res = await fetch(`${app.appUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(app.logs.join('\n')).not.toContain('health.detail');
  });

  it('the detail is given only to a request bearing the health token', async () => {
    const app = await start('guarded', { path: '/healthz', token: TOKEN });
    const withToken = await fetch(`${app.appUrl}/healthz`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(withToken.status).toBe(200);
    expect(await withToken.json()).toMatchObject({
      status: 'ok',
      database: { status: 'up' },
      purges: { pending: 0 },
      refresh: { lastFailure: null },
    });
    for (const authorization of [`Bearer ${TOKEN.slice(0, -1)}x`, `Bearer ${TOKEN}x`, TOKEN, '']) {
      const res = await fetch(`${app.appUrl}/healthz`, { headers: { authorization } });
      expect(res.status, authorization).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    }
  });

  it("health.detail: 'public' shows the detail to anyone and is warned about at start, naming the fix", async () => {
    const app = await start('public', { path: '/healthz', detail: 'public' });
    const res = await fetch(`${app.appUrl}/healthz`);
    expect(await res.json()).toMatchObject({ database: { status: 'up' } });
    const warning = app.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['setting'] === 'health.detail');
    expect(warning?.['level']).toBe(40);
    expect(String(warning?.['msg'])).toContain('STORE_APP_HEALTH_TOKEN');
  });

  it('reads the token from STORE_APP_HEALTH_TOKEN; a short token, or a token with detail public, fails at start naming the setting', () => {
    const env = validEnv();
    expect(
      resolveConfig({ health: {} }, { ...env, STORE_APP_HEALTH_TOKEN: TOKEN }).health.token,
    ).toBe(TOKEN);
    // No health section: no route, and the variable is not read into one.
    expect(resolveConfig({}, { ...env, STORE_APP_HEALTH_TOKEN: TOKEN }).health.path).toBeNull();
    const short = configProblem({ health: {} }, { ...env, STORE_APP_HEALTH_TOKEN: 'short' });
    expect(short.setting).toBe('STORE_APP_HEALTH_TOKEN');
    expect(short.message).not.toContain('short');
    const both: ConfigError = configProblem({ health: { detail: 'public', token: TOKEN } }, env);
    expect(both.setting).toBe('health.detail');
  });
});
