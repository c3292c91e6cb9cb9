/**
 * Issue 23 §2: a write that only the session cookie authenticates is refused
 * when another site sent it (Sec-Fetch-Site: cross-site, or a foreign
 * Origin). The app itself, the same-site admin, non-browser clients and any
 * caller with the app session token keep working. Over real sockets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-cross-site-'));

/** A request over node:http with exactly these headers (Origin and Sec-Fetch-* included). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('cross-site writes with the session cookie (issue 23 §2)', () => {
  let platform: Platform;
  let h: Harness;
  let resyncs = 0;
  let cookie = '';
  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
    h = await startHarness({
      databaseUrl: join(dir, 'app.db'),
      platform,
      kit: { embedded: { enabled: false } },
      routes: (app, kit) => {
        // A route with no body: the shape express.json() does not protect.
        app.post('/api/resync', kit.authenticated(), (_req, res) => {
          resyncs++;
          res.json({ storeId: res.locals.store.storeId });
        });
        app.get('/api/whoami', kit.authenticated(), (_req, res) => {
          res.json({ storeId: res.locals.store.storeId });
        });
      },
    });
    const browser = new Browser();
    const callback = platform.approveInstall({
      authorizeUrl: await begin(h, browser),
      storeId: h.storeId,
    });
    expect((await browser.get(callback)).status).toBe(302);
    cookie = [...browser.cookies.entries()].map(([k, c]) => `${k}=${c.value}`).join('; ');
  });
  afterAll(async () => {
    await h?.close();
    await platform?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const json = { accept: 'application/json' };

  it('refuses a cookie-authenticated POST from another site (Origin or Sec-Fetch-Site) with 403, and the route never runs', async () => {
    const before = resyncs;
    const foreign: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'null' },
    ];
    for (const headers of foreign) {
      const res = await raw(`${h.appUrl}/api/resync`, 'POST', { ...json, cookie, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(JSON.parse(res.body).code).toBe('CROSS_SITE_REQUEST');
    }
    expect(resyncs).toBe(before);
  });

  it('the app itself, the same-site admin, a non-browser client and a bearer token still write', async () => {
    const before = resyncs;
    const { token } = await h.kit.sessionToken(h.storeId);
    const cases: Record<string, string>[] = [
      { cookie, origin: h.appUrl, 'sec-fetch-site': 'same-origin' },
      // helmet's Referrer-Policy no-referrer makes a same-origin fetch POST send Origin: null.
      { cookie, origin: 'null', 'sec-fetch-site': 'same-origin' },
      { cookie, 'sec-fetch-site': 'same-site' },
      { cookie, origin: h.appUrl },
      { cookie },
      {
        authorization: `Bearer ${token}`,
        origin: 'https://evil.example',
        'sec-fetch-site': 'cross-site',
      },
    ];
    for (const headers of cases) {
      const res = await raw(`${h.appUrl}/api/resync`, 'POST', { ...json, ...headers });
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(JSON.parse(res.body).storeId).toBe(h.storeId);
    }
    expect(resyncs).toBe(before + cases.length);
  });

  it('a cross-site GET (a link, the admin framing the app) is not a write and still works', async () => {
    const res = await raw(`${h.appUrl}/api/whoami`, 'GET', {
      ...json,
      cookie,
      'sec-fetch-site': 'cross-site',
    });
    expect(res.status).toBe(200);
  });
});
