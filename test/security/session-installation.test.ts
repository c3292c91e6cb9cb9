/**
 * Issue 23 §4: an app session token belongs to one installation. A token
 * issued before an uninstall is refused after a reinstall, and
 * `GET /auth/session-token` does not renew it. Real install, uninstall and
 * reinstall against the local platform over real sockets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-session-inst-'));
const xhr = { 'x-requested-with': 'XMLHttpRequest', accept: 'application/json' };

describe('session tokens are tied to one installation (issue 23 §4)', () => {
  let platform: Platform;
  let h: Harness;
  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
    h = await startHarness({
      databaseUrl: join(dir, 'app.db'),
      platform,
      kit: { embedded: { enabled: false } },
      routes: (app, kit) => {
        app.get('/app', kit.authenticated(), (_req, res) => {
          res.json({ storeId: res.locals.store.storeId });
        });
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await platform?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Installs in a fresh browser and returns a session token minted from its cookie session. */
  async function installAndMint(): Promise<string> {
    const browser = new Browser();
    const callback = platform.approveInstall({
      authorizeUrl: await begin(h, browser),
      storeId: h.storeId,
    });
    expect((await browser.get(callback)).status).toBe(302);
    const res = await browser.get(`${h.appUrl}/auth/session-token`, xhr);
    expect(res.status).toBe(200);
    return ((await res.json()) as { token: string }).token;
  }

  const withBearer = (path: string, token: string) =>
    fetch(`${h.appUrl}${path}`, { headers: { ...xhr, authorization: `Bearer ${token}` } });

  it('a token from before an uninstall is refused after the reinstall, and is not renewed', async () => {
    const old = await installAndMint();
    expect((await withBearer('/app', old)).status).toBe(200);

    platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId: h.clientId, count: 1 });
    expect(delivery!.status).toBe('succeeded');
    expect((await withBearer('/app', old)).status).toBe(401);

    const fresh = await installAndMint();
    const refused = await withBearer('/app', old);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('SESSION_TOKEN_INVALID');
    // The frontend is told where to go: through the install, as for an uninstalled store.
    expect(refused.headers.get('x-store-app-reauthorize')).toContain(h.storeId);

    const renewal = await withBearer('/auth/session-token', old);
    expect(renewal.status).toBe(401);
    expect(await renewal.text()).not.toContain('"token"');

    // The reinstall's own token works, and renews into one that works.
    expect((await withBearer('/app', fresh)).status).toBe(200);
    const renewed = await withBearer('/auth/session-token', fresh);
    expect(renewed.status).toBe(200);
    const next = ((await renewed.json()) as { token: string }).token;
    expect((await withBearer('/app', next)).status).toBe(200);
  });

  it('kit.sessionToken() mints for the current installation and refuses a store not installed', async () => {
    const { token } = await h.kit.sessionToken(h.storeId);
    expect((await withBearer('/app', token)).status).toBe(200);
    await expect(h.kit.sessionToken('not-installed-store')).rejects.toMatchObject({
      code: 'NOT_INSTALLED',
    });
  });
});
