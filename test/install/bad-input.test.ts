/**
 * Every bad input of the install flow gets a specific status and stores
 * nothing. One app on a SQLite file, driven over real sockets.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { Browser, begin, type Harness, startHarness } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-bad-'));
const file = join(dir, 'bad.db');
let h: Harness;

/** Single-use records (used states and codes): bad input must write none. */
function pendingStates(): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('select count(*) as n from store_app_claims').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function expectPage(res: Response, status: number, code: string): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('x-store-app-error')).toBe(code);
  expect(res.headers.get('content-type')).toMatch(/text\/html/);
  return res.text();
}

beforeAll(async () => {
  h = await startHarness({ databaseUrl: file });
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('begin (GET /auth)', () => {
  it('refuses a malformed store_id with 400 and stores no state', async () => {
    const before = pendingStates();
    const res = await new Browser().get(`${h.appUrl}/auth?store_id=not%20a%20store%3F`);
    await expectPage(res, 400, E.STORE_ID_INVALID);
    expect(pendingStates()).toBe(before);
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('refuses a repeated or absurdly long parameter with 400', async () => {
    const b = new Browser();
    const rep = await b.get(`${h.appUrl}/auth?store_id=${h.storeId}&store_id=${h.storeId}`);
    await expectPage(rep, 400, E.REQUEST_INVALID);
    const long = await b.get(`${h.appUrl}/auth?store_id=${h.storeId}&x=${'a'.repeat(5000)}`);
    await expectPage(long, 400, E.REQUEST_INVALID);
  });

  it('inside the admin iframe, breaks out to the top window instead of redirecting', async () => {
    const before = pendingStates();
    for (const [url, headers] of [
      [`${h.appUrl}/auth?store_id=${h.storeId}`, { 'sec-fetch-dest': 'iframe' }],
      [`${h.appUrl}/auth?store_id=${h.storeId}&embedded=1`, {}],
    ] as const) {
      const res = await new Browser().get(url, headers);
      expect(res.status).toBe(200);
      expect(res.headers.getSetCookie()).toEqual([]);
      const csp = res.headers.get('content-security-policy')!;
      const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
      expect(nonce).toBeTruthy();
      expect(csp).toContain(`frame-ancestors ${new URL(h.platform.authUrl).origin}`);
      const html = await res.text();
      expect(html).toContain(`<script nonce="${nonce}">`);
      expect(html).toContain('window.top.location');
      expect(html).toContain('target="_top"');
      expect(html).toContain(`/auth?store_id=${h.storeId}`);
      expect(html).not.toContain('embedded=1');
    }
    expect(pendingStates()).toBe(before);
  });

  it('at top level with embedded=1 (Sec-Fetch-Dest: document) proceeds to the platform', async () => {
    const res = await new Browser().get(`${h.appUrl}/auth?store_id=${h.storeId}&embedded=1`, {
      'sec-fetch-dest': 'document',
    });
    expect(res.status).toBe(302);
  });
});

describe('callback (GET /auth/callback)', () => {
  it('access_denied shows a friendly page with a retry link and uses the state up', async () => {
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const denied = h.platform.denyInstall({ authorizeUrl, storeId: h.storeId });
    const html = await expectPage(await b.get(denied), 403, E.ACCESS_DENIED);
    expect(html).toContain(`href="${h.appUrl}/auth?store_id=${h.storeId}"`);
    // The state is gone: approving the same request later cannot install.
    const late = await b.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
    expect(late.status).toBe(400);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('another error parameter answers 400 naming only a safe code', async () => {
    const res = await new Browser().get(
      `${h.appUrl}/auth/callback?error=invalid_scope&error_description=%3Cscript%3E&state=x`,
    );
    const html = await expectPage(res, 400, E.PLATFORM_ERROR);
    expect(html).toContain('invalid_scope');
    expect(html).not.toContain('<script>');
    const weird = await new Browser().get(`${h.appUrl}/auth/callback?error=%3Cb%3E`);
    expect(await expectPage(weird, 400, E.PLATFORM_ERROR)).not.toContain('<b>');
  });

  it('missing state or code answers 400', async () => {
    const b = new Browser();
    await begin(h, b);
    await expectPage(
      await b.get(`${h.appUrl}/auth/callback?code=abc&store_id=${h.storeId}`),
      400,
      E.REQUEST_INVALID,
    );
    await expectPage(
      await b.get(`${h.appUrl}/auth/callback?state=abc&store_id=${h.storeId}`),
      400,
      E.REQUEST_INVALID,
    );
    await expectPage(await b.get(`${h.appUrl}/auth/callback`), 400, E.REQUEST_INVALID);
  });

  it('absurdly long query values answer 400', async () => {
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const cb = new URL(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
    cb.searchParams.set('code', 'c'.repeat(10_000));
    await expectPage(await b.get(cb.toString()), 400, E.REQUEST_INVALID);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('a callback without the binding cookie answers 400 and stores nothing', async () => {
    const authorizeUrl = await begin(h, new Browser());
    const cb = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    await expectPage(await new Browser().get(cb), 400, E.BINDING_MISSING);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('a forged state answers 400', async () => {
    const b = new Browser();
    await begin(h, b);
    const forged = `${h.appUrl}/auth/callback?code=abc&state=${'A'.repeat(43)}&store_id=${h.storeId}`;
    await expectPage(await b.get(forged), 400, E.STATE_INVALID);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it("a callback carried to another browser (someone else's pending install) answers 400 and stores nothing", async () => {
    const victim = new Browser();
    const attacker = new Browser();
    await begin(h, victim);
    const attackerAuthorize = await begin(h, attacker);
    const attackerCallback = h.platform.approveInstall({
      authorizeUrl: attackerAuthorize,
      storeId: h.storeId,
    });
    await expectPage(await victim.get(attackerCallback), 400, E.STATE_INVALID);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
    // The victim's browser holds no entry for that state, so it cannot use it up: pending
    // installs live in each browser's own cookie, not in a shared table.
    expect(victim.cookies.has('store_app_oauth')).toBe(true);
  });

  it('an expired state answers 400', async () => {
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const cb = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 11 * 60_000 });
    // The cookie outlived its Max-Age in a real browser; the server refuses either way.
    await expectPage(await b.get(cb), 400, E.STATE_INVALID);
    vi.useRealTimers();
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('store_id swapped in the callback answers 400', async () => {
    const other = h.platform.createStore({ name: 'Other' }).storeId;
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const cb = new URL(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
    cb.searchParams.set('store_id', other);
    await expectPage(await b.get(cb.toString()), 400, E.STORE_MISMATCH);
    const bad = new URL(cb);
    bad.searchParams.set('store_id', 'no/pe');
    await expectPage(await b.get(bad.toString()), 400, E.STORE_ID_INVALID);
    expect(await h.kit.installations.list()).toEqual([]);
  });

  it('an expired code restarts the install once, then gives up without a loop', async () => {
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const cb1 = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    h.platform.advanceClock(120);
    const restart = await b.get(cb1);
    expect(restart.status).toBe(302);
    const again = restart.headers.get('location')!;
    expect(again.startsWith(`${h.platform.authUrl}/oauth/authorize?`)).toBe(true);
    expect(new URL(again).searchParams.get('state')).not.toBe(
      new URL(authorizeUrl).searchParams.get('state'),
    );
    const cb2 = h.platform.approveInstall({ authorizeUrl: again, storeId: h.storeId });
    h.platform.advanceClock(120);
    await expectPage(await b.get(cb2), 400, E.CODE_REJECTED);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('a replayed callback (code and state reused) answers 400 and changes nothing', async () => {
    const b = new Browser();
    const authorizeUrl = await begin(h, b);
    const cb = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    const cookies = new Map(b.cookies);
    expect((await b.get(cb)).status).toBe(302);
    const installed = await h.kit.installations.get(h.storeId);
    // Replay with the original binding cookie restored.
    for (const [k, v] of cookies) b.cookies.set(k, v);
    await expectPage(await b.get(cb), 400, E.STATE_INVALID);
    const after = await h.kit.installations.get(h.storeId);
    expect(after!.version).toBe(installed!.version);
    expect(after!.accessToken).toBe(installed!.accessToken);
    await h.kit.installations.delete(h.storeId);
  });
});

describe('token endpoint failures during the exchange', () => {
  let fake: Server;
  let mode: 'refuse' | '500' | 'html' | 'wrong-types' | 'other-store' = '500';
  let f: Harness;

  beforeAll(async () => {
    fake = createServer((req, res) => {
      if (mode === 'refuse') {
        req.socket.destroy();
        return;
      }
      if (mode === '500') {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"server_error"}');
        return;
      }
      if (mode === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        return;
      }
      const body =
        mode === 'wrong-types'
          ? { access_token: 42, token_type: 'Bearer' }
          : {
              access_token: 'at_x',
              token_type: 'Bearer',
              expires_in: 86400,
              scope: 'read_products',
              store_id: randomUUID(),
            };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    fake.listen(0, '127.0.0.1');
    await once(fake, 'listening');
    const fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    f = await startHarness({
      databaseUrl: join(dir, 'fake.db'),
      platform: h.platform,
      authUrl: fakeUrl,
    });
  });
  afterAll(async () => {
    await f?.close();
    fake?.close();
  });

  it.each(['refuse', '500', 'html', 'wrong-types', 'other-store'] as const)(
    'platform %s → 502 page with a retry link, nothing stored',
    async (m) => {
      mode = m;
      const b = new Browser();
      const authorizeUrl = new URL(await begin(f, b));
      const onPlatform = `${h.platform.authUrl}${authorizeUrl.pathname}${authorizeUrl.search}`;
      const cb = h.platform.approveInstall({ authorizeUrl: onPlatform, storeId: f.storeId });
      const html = await expectPage(await b.get(cb), 502, E.TOKEN_EXCHANGE_FAILED);
      expect(html).toContain(`${f.appUrl}/auth?store_id`);
      expect(await f.kit.installations.list()).toEqual([]);
    },
  );
});

describe('database unavailable', () => {
  it('the callback and the session answer 503; begin, which needs no database, still redirects', async () => {
    const d = await startHarness({ databaseUrl: join(dir, 'down.db'), platform: h.platform });
    try {
      const b = new Browser();
      const installed = await b.get(
        h.platform.approveInstall({ authorizeUrl: await begin(d, b), storeId: d.storeId }),
      );
      expect(installed.status).toBe(302);
      const authorizeUrl = await begin(d, b);
      const cb = h.platform.approveInstall({ authorizeUrl, storeId: d.storeId });
      await internalsOf(d.kit).storage.close();
      // The session cookie cannot be checked: 503, not "logged out" and not a stack trace.
      const home = await b.get(`${d.appUrl}/`);
      expect(home.status).toBe(503);
      const homeText = await home.text();
      expect(JSON.parse(homeText).code).toBe(E.STORAGE_UNAVAILABLE);
      expect(homeText).not.toMatch(/at .*\.js:\d+/);
      // Begin needs no database (its state is a sealed cookie; the kit's session is read
      // only where the kit needs it): it still sends the merchant to the platform.
      const other = new Browser();
      expect((await other.get(`${d.appUrl}/auth?store_id=${d.storeId}`)).status).toBe(302);
      await expectPage(await b.get(cb), 503, E.STORAGE_UNAVAILABLE);
    } finally {
      await d.close().catch(() => undefined);
    }
  });
});
