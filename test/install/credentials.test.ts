/**
 * A wrong client secret: the platform answers the code exchange with
 * invalid_client. The operator must learn which setting to fix; the merchant
 * must not be told to retry, and nobody may see the secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { Browser, begin, type Harness, startHarness } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-creds-'));
const WRONG = 'wrong-client-secret-0123456789abcdef';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    databaseUrl: join(dir, 'creds.db'),
    kit: { oauth: { clientSecret: WRONG } },
  });
});
afterAll(async () => {
  await h?.close();
  await good?.close();
  await wrong?.close();
  await platform?.close();
  rmSync(dir, { recursive: true, force: true });
});

let platform: Platform;
let good: Harness;
let wrong: Harness;

describe('invalid_client on the code exchange', () => {
  it('logs a message naming STORE_APP_CLIENT_SECRET; the page names no secret and stores nothing', async () => {
    const b = new Browser();
    const res = await b.get(
      h.platform.approveInstall({ authorizeUrl: await begin(h, b), storeId: h.storeId }),
    );
    expect(res.status).toBe(500);
    expect(res.headers.get('x-store-app-error')).toBe(E.CLIENT_REJECTED);
    const html = await res.text();
    expect(html).not.toContain(WRONG);
    expect(html).not.toContain(h.clientSecret);
    expect(html).not.toMatch(/unavailable/i);
    expect(html).toContain('developer');
    expect(await h.kit.installations.list()).toEqual([]);

    const line = h.logs.find((l) => l.includes('invalid_client'));
    expect(line).toBeDefined();
    expect(line).toContain('STORE_APP_CLIENT_SECRET');
    const logs = h.logs.join('\n');
    expect(logs).not.toContain(WRONG);
    expect(logs).not.toContain(h.clientSecret);
  });
});

/** Polls `check` until it holds; the sweep runs on its own timer. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('invalid_client on a token refresh', () => {
  // Two kits on one database and one platform: `good` installs the store with
  // the right secret; `wrong` runs with a wrong STORE_APP_CLIENT_SECRET (a
  // mistyped deploy). A huge refresh window makes every token "due", so the
  // background sweep and each request refresh at once.
  const key = generateKey();
  const databaseUrl = join(dir, 'refresh.db');
  const routes = (app: import('express').Express, kit: Harness['kit']) => {
    app.get('/app', kit.authenticated(), (_req, res) => {
      res.json({ ok: true });
    });
  };

  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
    good = await startHarness({
      platform,
      databaseUrl,
      kit: { storage: { encryptionKeys: [key] }, refresh: { sweepIntervalMs: 0 } },
      routes,
    });
    const b = new Browser();
    const cb = await b.get(
      platform.approveInstall({ authorizeUrl: await begin(good, b), storeId: good.storeId }),
    );
    expect(cb.status).toBe(302);
    wrong = await startHarness({
      platform,
      databaseUrl,
      kit: {
        storage: { encryptionKeys: [key] },
        oauth: { clientId: good.clientId, clientSecret: WRONG },
        refresh: { windowSeconds: 10 * 86_400, sweepIntervalMs: 20 },
      },
      routes,
    });
  });

  it('the background sweep logs one error naming STORE_APP_CLIENT_SECRET and STORE_APP_CLIENT_ID, keeps the installation, logs no secret', async () => {
    const before = await good.kit.installations.get(good.storeId);
    await until(
      () => wrong.logs.some((l) => l.includes('refresh.client_rejected')),
      'the refresh error log',
    );
    // A few more sweep ticks, all refused: still one error line, not one per tick.
    const refusals = () => platform.stats().tokenRequests.refresh_token;
    const seen = refusals();
    await until(() => refusals() >= seen + 3, 'more sweep ticks');
    const errors = wrong.logs.filter((l) => l.includes('refresh.client_rejected'));
    expect(errors).toHaveLength(1);
    // Nor a warn per store and tick repeating it (it would bury the one error).
    const warns = wrong.logs.filter((l) => (JSON.parse(l) as { level: number }).level === 40);
    expect(warns.filter((l) => /refresh failed/i.test(l))).toEqual([]);
    const line = JSON.parse(errors[0]!) as { level: number; msg: string };
    expect(line.level).toBe(50);
    expect(line.msg).toContain('STORE_APP_CLIENT_SECRET');
    expect(line.msg).toContain('STORE_APP_CLIENT_ID');
    expect(line.msg).not.toMatch(/try again/i);

    const after = await good.kit.installations.get(good.storeId);
    expect(after).toMatchObject({
      needsReauth: false,
      version: before!.version,
      accessToken: before!.accessToken,
      refreshToken: before!.refreshToken,
    });
    const logs = wrong.logs.join('\n');
    for (const secret of [WRONG, good.clientSecret, before!.accessToken, before!.refreshToken]) {
      expect(logs).not.toContain(secret);
    }
  });

  it('an inline refresh throws REFRESH_CLIENT_REJECTED naming the variables; the frontend gets 500 with the code, no setting, no retry advice', async () => {
    const err = await wrong.kit
      .client(good.storeId)
      .products.list({ limit: 1 })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'REFRESH_CLIENT_REJECTED', status: 500 });
    expect((err as Error).message).toContain('STORE_APP_CLIENT_SECRET');
    expect((err as Error).message).not.toContain(WRONG);

    // The embedded frontend's call through authenticated(): 500 with the code, no 503 "try later".
    const { token } = await wrong.kit.sessionToken(good.storeId);
    const res = await fetch(`${wrong.appUrl}/app`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    const body = (await res.json()) as { code: string; message: string };
    expect(res.status).toBe(500);
    expect(body.code).toBe('REFRESH_CLIENT_REJECTED');
    expect(body.message).not.toContain('STORE_APP_CLIENT_SECRET');
    expect(body.message).not.toContain(WRONG);
    expect(body.message).not.toMatch(/try again|reload/i);
  });

  it('the kit with the right secret still refreshes the same installation afterwards (nothing was flagged or purged)', async () => {
    platform.advanceClock(86_400 + 60);
    // The platform now rejects the stored token: the right kit refreshes and replays.
    const before = await good.kit.installations.get(good.storeId);
    const page = await good.kit.client(good.storeId).products.list({ limit: 1 });
    expect(page).toBeDefined();
    const after = await good.kit.installations.get(good.storeId);
    expect(after!.needsReauth).toBe(false);
    expect(after!.version).toBe(before!.version + 1);
    expect(after!.refreshToken).not.toBe(before!.refreshToken);
  });
});
