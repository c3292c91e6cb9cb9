/**
 * The full install over real sockets: app on one port, local platform on
 * another, a cookie-jar browser in between. Runs on a SQLite file and on
 * the real Postgres and MariaDB.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser, begin, type Harness, SCOPES, startHarness } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-install-'));
let pg: TempDatabase;
let maria: TempDatabase;

beforeAll(async () => {
  pg = await createTempDatabase('sak_install');
  maria = await createTempMysqlDatabase('sak_install');
});
afterAll(async () => {
  await pg?.drop();
  await maria?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['sqlite', () => join(dir, 'flow.db')],
  ['postgres', () => pg.url],
  ['mariadb', () => maria.url],
])('full install on %s', (_dialect, databaseUrl) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ databaseUrl: databaseUrl() });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('installs a store end to end, stores working tokens, starts a session and logs no secret', async () => {
    const tokenBodies: string[] = [];
    const realFetch = globalThis.fetch;
    const spy = vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      if (String(input).endsWith('/oauth/token')) tokenBodies.push(String(init?.body));
      return realFetch(input, init);
    });
    try {
      const browser = new Browser();
      const beginRes = await browser.get(`${h.appUrl}/auth?store_id=${h.storeId}`);
      expect(beginRes.status).toBe(302);
      expect(beginRes.headers.get('cache-control')).toBe('no-store');
      const authorizeUrl = new URL(beginRes.headers.get('location')!);
      expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(
        `${h.platform.authUrl}/oauth/authorize`,
      );
      const p = authorizeUrl.searchParams;
      expect(p.get('client_id')).toBe(h.clientId);
      expect(p.get('redirect_uri')).toBe(`${h.appUrl}/auth/callback`);
      expect(p.get('scope')).toBe(SCOPES.join(','));
      expect(p.get('response_type')).toBe('code');
      expect(p.get('code_challenge_method')).toBe('S256');
      expect(p.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(p.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(p.get('store_id')).toBe(h.storeId);

      const setCookie = beginRes.headers.getSetCookie().join('\n');
      expect(setCookie).toMatch(
        /store_app_oauth=[^;]+; Max-Age=600; Path=\/auth;.*HttpOnly; SameSite=Lax/,
      );
      // Plain-HTTP loopback app: Secure would make the browser drop the cookie.
      expect(setCookie).not.toMatch(/Secure/);

      const callbackUrl = h.platform.approveInstall({
        authorizeUrl: authorizeUrl.toString(),
        storeId: h.storeId,
      });
      const code = new URL(callbackUrl).searchParams.get('code')!;
      const cb = await browser.get(callbackUrl);
      expect(cb.status).toBe(302);
      expect(cb.headers.get('location')).toBe(
        `${h.platform.authUrl}/admin/stores/${h.storeId}/apps/${h.clientId}`,
      );
      // Binding cookie cleared; session cookie set (store id only, in the database).
      expect(browser.cookies.has('store_app_oauth')).toBe(false);
      expect(browser.cookies.has('store_app.sid')).toBe(true);

      const inst = await h.kit.installations.get(h.storeId);
      expect(inst).not.toBeNull();
      expect(inst!.scopes.sort()).toEqual([...SCOPES].sort());
      expect(inst!.refreshToken).toEqual(expect.any(String));
      expect(inst!.accessTokenExpiresAt.getTime()).toBeGreaterThan(Date.now() + 86_000_000);
      expect(h.kit.installations.hasRequiredScopes(inst!)).toBe(true);

      // The stored access token works against the platform.
      const session = await fetch(`${h.platform.authUrl}/oauth/session`, {
        headers: { authorization: `Bearer ${inst!.accessToken}` },
      });
      expect(session.status).toBe(200);
      expect(((await session.json()) as { store_id: string }).store_id).toBe(h.storeId);

      // The browser session now acts for the store.
      const home = await browser.get(`${h.appUrl}/`);
      expect(await home.json()).toEqual({ storeId: h.storeId });

      // No issued secret anywhere in the logs.
      expect(tokenBodies).toHaveLength(1);
      const sent = JSON.parse(tokenBodies[0]!) as Record<string, string>;
      const secrets = [
        inst!.accessToken,
        inst!.refreshToken!,
        code,
        sent.code_verifier!,
        h.clientSecret,
        p.get('state')!,
        browser.cookies.get('store_app.sid')!.value,
      ];
      // Nor in the database files (tokens are JWE, the session row holds the store id only).
      if (_dialect === 'sqlite') {
        const file = databaseUrl();
        const raw = [file, `${file}-wal`]
          .filter((f) => existsSync(f))
          .map((f) => readFileSync(f).toString('latin1'))
          .join('');
        expect(raw.length).toBeGreaterThan(0);
        for (const s of secrets.slice(0, 4)) expect(raw).not.toContain(s);
      }
      const logText = h.logs.join('');
      expect(logText).toContain('store installed');
      for (const s of secrets) {
        expect(s.length).toBeGreaterThan(10);
        expect(logText).not.toContain(s);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('a reinstall replaces tokens and scopes in place', async () => {
    const before = await h.kit.installations.get(h.storeId);
    expect(before).not.toBeNull();
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    const cb = await browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
    expect(cb.status).toBe(302);
    const after = await h.kit.installations.get(h.storeId);
    expect(after!.accessToken).not.toBe(before!.accessToken);
    expect(after!.version).toBeGreaterThan(before!.version);
    expect(await h.kit.installations.list()).toHaveLength(1);
  });

  it('an install replaces a session id the browser already had (fixation defence)', async () => {
    const browser = new Browser();
    // A session id planted in the browser before the install (e.g. by an attacker).
    await browser.get(
      h.platform.approveInstall({ authorizeUrl: await begin(h, browser), storeId: h.storeId }),
    );
    const planted = browser.cookies.get('store_app.sid')!.value;
    const cb = await browser.get(
      h.platform.approveInstall({ authorizeUrl: await begin(h, browser), storeId: h.storeId }),
    );
    expect(cb.status).toBe(302);
    const fresh = browser.cookies.get('store_app.sid')!.value;
    expect(fresh).not.toBe(planted);
    expect(await (await browser.get(`${h.appUrl}/`)).json()).toEqual({ storeId: h.storeId });
    // Whoever kept the old id holds nothing.
    const other = new Browser();
    other.cookies.set('store_app.sid', { value: planted, path: '/' });
    const stale = await other.get(`${h.appUrl}/`);
    expect(stale.status).toBe(401);
    expect(((await stale.json()) as { code: string }).code).toBe('SESSION_REQUIRED');
  });

  it('kit.installations.delete purges the store', async () => {
    const result = await h.kit.installations.delete(h.storeId);
    expect(result.purged).toBe(true);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });
});
