/**
 * The RFC 9700 (OAuth 2.0 Security Best Current Practice) items that apply
 * to a confidential client using the authorization code grant, one named
 * test each, against the kit and the local platform over real sockets.
 * Items that do not apply are listed in docs/reliability.md with the reason.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';
import { pkce, install as platformInstall } from '../platform/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-rfc9700-'));
let platform: Platform;
let h: Harness;
let plain: Harness;

beforeAll(async () => {
  platform = await startPlatform();
  h = await startHarness({ databaseUrl: join(dir, 'embedded.db'), platform });
  plain = await startHarness({
    databaseUrl: join(dir, 'plain.db'),
    platform,
    kit: { embedded: { enabled: false } },
  });
});
afterAll(async () => {
  await h?.close();
  await plain?.close();
  await platform?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

interface TokenCall {
  url: string;
  body: Record<string, string>;
}

/** Records the kit's token endpoint calls (the real requests still go out). */
function recordTokenCalls(): TokenCall[] {
  const calls: TokenCall[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.endsWith('/oauth/token')) {
      const raw = String(init?.body ?? '');
      const body = raw.startsWith('{')
        ? (JSON.parse(raw) as Record<string, string>)
        : Object.fromEntries(new URLSearchParams(raw));
      calls.push({ url, body });
    }
    return realFetch(input, init);
  });
  return calls;
}

async function installVia(
  harness: Harness,
  browser = new Browser(),
  path = `/auth?store_id=${harness.storeId}`,
) {
  const begun = await browser.get(`${harness.appUrl}${path}`);
  expect(begun.status).toBe(302);
  const authorizeUrl = begun.headers.get('location')!;
  const callbackUrl = harness.platform.approveInstall({ authorizeUrl, storeId: harness.storeId });
  const callback = await browser.get(callbackUrl);
  return { begun, authorizeUrl, callbackUrl, callback, browser };
}

function postToken(body: Record<string, string>): Promise<Response> {
  return fetch(`${platform.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function session(accessToken: string): Promise<Response> {
  return fetch(`${platform.authUrl}/oauth/session`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

describe('RFC 9700 checklist (confidential client, authorization code grant)', () => {
  it('§2.1 / §4.7.1 CSRF: a callback carrying a state minted for another browser is refused and stores nothing', async () => {
    const victim = new Browser();
    const attacker = new Browser();
    // The attacker starts an install in their own browser and gets a code + state…
    const attackerAuthorize = await begin(h, attacker);
    const attackerCallback = h.platform.approveInstall({
      authorizeUrl: attackerAuthorize,
      storeId: h.storeId,
    });
    // …and makes the victim's browser (which has its own pending install) load it.
    await begin(h, victim);
    const before = await h.kit.installations.get(h.storeId);
    const res = await victim.get(attackerCallback);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-store-app-error')).toBe(E.STATE_INVALID);
    // A browser with no pending install at all is refused too.
    const bare = await new Browser().get(attackerCallback);
    expect(bare.status).toBe(400);
    expect(bare.headers.get('x-store-app-error')).toBe(E.BINDING_MISSING);
    expect(await h.kit.installations.get(h.storeId)).toEqual(before);
  });

  it('§2.1 / §4.1.3 exact redirect URI: the kit sends the registered URI byte for byte, the platform refuses any other', async () => {
    const authorizeUrl = new URL(await begin(h, new Browser()));
    expect(authorizeUrl.searchParams.get('redirect_uri')).toBe(`${h.appUrl}/auth/callback`);
    for (const variant of [
      `${h.appUrl}/auth/callback/`,
      `${h.appUrl}/auth/callback?x=1`,
      `${h.appUrl}/auth/Callback`,
      `${h.appUrl}/auth/callback/../callback`,
      h.appUrl.replace('127.0.0.1', 'localhost') + '/auth/callback',
      'https://evil.example/auth/callback',
    ]) {
      const bad = new URL(authorizeUrl);
      bad.searchParams.set('redirect_uri', variant);
      const res = await fetch(bad, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
    // The code is bound to the redirect URI it was issued for.
    const { verifier, challenge } = pkce();
    const url = new URL(authorizeUrl);
    url.searchParams.set('code_challenge', challenge);
    const code = new URL(
      platform.approveInstall({ authorizeUrl: url.toString(), storeId: h.storeId }),
    ).searchParams.get('code')!;
    const res = await postToken({
      grant_type: 'authorization_code',
      client_id: h.clientId,
      client_secret: h.clientSecret,
      code,
      code_verifier: verifier,
      redirect_uri: `${h.appUrl}/auth/callback/`,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('§2.1.1 / §4.5 / §4.8 PKCE: S256 is always sent and verified; no or wrong verifier and downgrades are refused', async () => {
    const calls = recordTokenCalls();
    const { authorizeUrl, callback } = await installVia(h);
    expect(callback.status).toBe(302);
    const params = new URL(authorizeUrl).searchParams;
    expect(params.get('code_challenge_method')).toBe('S256');
    const [call] = calls;
    expect(call?.body['code_verifier']).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(s256(call!.body['code_verifier']!)).toBe(params.get('code_challenge'));

    // Platform side: a code issued for a challenge needs the matching verifier.
    const mint = () =>
      new URL(platform.approveInstall({ authorizeUrl, storeId: h.storeId })).searchParams.get(
        'code',
      )!;
    const base = {
      grant_type: 'authorization_code',
      client_id: h.clientId,
      client_secret: h.clientSecret,
      redirect_uri: `${h.appUrl}/auth/callback`,
    };
    const missing = await postToken({ ...base, code: mint() });
    expect(missing.status).toBe(400);
    expect(['invalid_request', 'invalid_grant']).toContain(
      ((await missing.json()) as { error: string }).error,
    );
    const wrong = await postToken({ ...base, code: mint(), code_verifier: pkce().verifier });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' });
    // Downgrades at the authorize endpoint: no challenge, or the plain method.
    for (const change of [
      (u: URL) => {
        u.searchParams.delete('code_challenge');
        u.searchParams.delete('code_challenge_method');
      },
      (u: URL) => u.searchParams.set('code_challenge_method', 'plain'),
    ]) {
      const u = new URL(authorizeUrl);
      change(u);
      const res = await fetch(u, { redirect: 'manual' });
      expect(res.status).toBe(302);
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe(
        'invalid_request',
      );
    }
  });

  it('§4.2.4 / RFC 6749 §4.1.2 code single use: a replayed callback is refused and a replayed code leaves the tokens unchanged (the document)', async () => {
    const calls = recordTokenCalls();
    const { callbackUrl, callback, browser } = await installVia(h);
    expect(callback.status).toBe(302);
    const installed = await h.kit.installations.get(h.storeId);
    expect((await session(installed!.accessToken)).status).toBe(200);

    const replay = await browser.get(callbackUrl);
    expect(replay.status).toBe(400);
    expect(await h.kit.installations.get(h.storeId)).toEqual(installed);

    const first = calls[0]!.body;
    const again = await postToken(first);
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
    // The document: a used code → invalid_grant, tokens unchanged (RFC-style
    // revocation is the platform's revokeOnCodeReplay option: test/security/code-replay.test.ts).
    expect((await session(installed!.accessToken)).status).toBe(200);
    // Leave a working installation for the next tests.
    expect((await installVia(h)).callback.status).toBe(302);
  });

  it('§4.2 / §4.3.2 no tokens in URLs or Referer: Referrer-Policy on kit pages, no token in any Location or page', async () => {
    const seen: string[] = [];
    const browser = new Browser();
    const begun = await browser.get(`${h.appUrl}/auth?store_id=${h.storeId}`);
    const authorizeUrl = begun.headers.get('location')!;
    const consent = await fetch(authorizeUrl);
    const consentPage = await consent.text();
    const callbackUrl = platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    const callback = await browser.get(callbackUrl);
    const landing = await browser.get(callback.headers.get('location')!);
    for (const res of [begun, callback]) {
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      seen.push(res.headers.get('location') ?? '', [...res.headers.entries()].join('\n'));
    }
    // The platform's own pages send at most the origin, never the code or state.
    expect(consent.headers.get('referrer-policy')).toMatch(/^(no-referrer|same-origin)$/);
    seen.push(consentPage, authorizeUrl, callbackUrl, await landing.text());
    const inst = await h.kit.installations.get(h.storeId);
    const secrets = [inst!.accessToken, inst!.refreshToken!, h.clientSecret];
    for (const text of seen) for (const s of secrets) expect(text).not.toContain(s);
    // The authorization code lives only in the callback URL, which answers with a redirect.
    expect(callback.status).toBe(302);
  });

  it('§2.2.2 / §4.14 refresh-token rotation: the kit stores the rotated refresh token; the old one dies after the grace period', async () => {
    const before = await h.kit.installations.get(h.storeId);
    const refreshesBefore = platform.stats().tokenRequests.refresh_token;
    platform.advanceClock(86_400 + 60);
    await h.kit.client(h.storeId).products.list({ limit: 1 });
    const after = await h.kit.installations.get(h.storeId);
    expect(platform.stats().tokenRequests.refresh_token).toBe(refreshesBefore + 1);
    expect(after!.refreshToken).not.toBe(before!.refreshToken);
    expect(after!.accessToken).not.toBe(before!.accessToken);
    platform.advanceClock(61);
    const old = await postToken({
      grant_type: 'refresh_token',
      client_id: h.clientId,
      client_secret: h.clientSecret,
      refresh_token: before!.refreshToken!,
    });
    expect(old.status).toBe(400);
    expect(await old.json()).toMatchObject({ error: 'invalid_grant' });
    // The stored (rotated) token keeps working.
    expect((await session(after!.accessToken)).status).toBe(200);
  });

  it('§4.4 mix-up: one authorization server per app — codes go only to the configured token endpoint', async () => {
    const calls = recordTokenCalls();
    const { callbackUrl } = await (async () => {
      const browser = new Browser();
      const authorizeUrl = await begin(h, browser);
      const cb = platform.approveInstall({ authorizeUrl, storeId: h.storeId });
      // An `iss` naming another server changes nothing: the kit knows one issuer.
      const forged = new URL(cb);
      forged.searchParams.set('iss', 'https://evil.example');
      const res = await browser.get(forged.toString());
      expect(res.status).toBe(302);
      return { callbackUrl: cb };
    })();
    expect(callbackUrl.startsWith(`${h.appUrl}/auth/callback?`)).toBe(true);
    expect(calls.map((c) => new URL(c.url).origin)).toEqual([platform.authUrl]);
  });

  it('§4.16 clickjacking: the consent page cannot be framed (frame-ancestors none, X-Frame-Options DENY)', async () => {
    const authorizeUrl = await begin(h, new Browser());
    const res = await fetch(authorizeUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    // The non-embedded kit refuses framing too; the embedded one allows only the admin.
    const plainPage = await new Browser().get(`${plain.appUrl}/auth?store_id=bad`);
    expect(plainPage.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const embeddedPage = await new Browser().get(`${h.appUrl}/auth?store_id=bad`);
    expect(embeddedPage.headers.get('content-security-policy')).toContain(
      `frame-ancestors ${platform.authUrl}`,
    );
  });

  it('§4.11.1 open redirector (client): return_to never leaves the app', async () => {
    for (const target of [
      'https://evil.example/x',
      '//evil.example/x',
      '/\\evil.example/x',
      '/%0d%0aLocation:%20https://evil.example',
      'javascript:alert(1)',
    ]) {
      const { callback } = await installVia(
        plain,
        new Browser(),
        `/auth?store_id=${plain.storeId}&return_to=${encodeURIComponent(target)}`,
      );
      expect(callback.status).toBe(302);
      const location = new URL(callback.headers.get('location')!, plain.appUrl);
      expect(location.origin).toBe(plain.appUrl);
    }
    const ok = await installVia(
      plain,
      new Browser(),
      `/auth?store_id=${plain.storeId}&return_to=${encodeURIComponent('/settings?tab=1')}`,
    );
    expect(ok.callback.headers.get('location')).toMatch(/\/settings\?tab=1$/);
  });

  it('§4.11.2 / §4.18 open redirector (authorization server): unknown client or redirect URI gets a page, never a redirect', async () => {
    const authorizeUrl = new URL(await begin(h, new Browser()));
    const unknownClient = new URL(authorizeUrl);
    unknownClient.searchParams.set('client_id', 'nope');
    unknownClient.searchParams.set('redirect_uri', 'https://evil.example/cb');
    const evilRedirect = new URL(authorizeUrl);
    evilRedirect.searchParams.set('redirect_uri', 'https://evil.example/cb');
    evilRedirect.searchParams.set('scope', 'not_a_scope');
    for (const u of [unknownClient, evilRedirect]) {
      const res = await fetch(u, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      // Never followed: no link, form, frame or refresh to it (the page may show the URI sent
      // as escaped text beside the registered one: test/platform/redirect-mismatch.test.ts).
      expect(await res.text()).not.toMatch(/(href|src|action|content)="[^"]*evil\.example/i);
    }
    // Redirected errors go only to the registered URI.
    const badScope = new URL(authorizeUrl);
    badScope.searchParams.set('scope', 'not_a_scope');
    const res = await fetch(badScope, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')!.startsWith(`${h.appUrl}/auth/callback?`)).toBe(true);
  });

  it('§4.12 307 redirect: the consent decision (a POST) redirects with 302/303, never 307', async () => {
    const authorizeUrl = await begin(h, new Browser());
    const page = await (await fetch(authorizeUrl)).text();
    const requestId = /name="request_id" value="([^"]+)"/.exec(page)?.[1];
    expect(requestId).toBeTruthy();
    const res = await fetch(`${platform.authUrl}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: platform.authUrl,
      },
      body: new URLSearchParams({
        request_id: requestId!,
        decision: 'approve',
        store_id: h.storeId,
      }).toString(),
    });
    expect([302, 303]).toContain(res.status);
    expect(res.headers.get('location')!.startsWith(`${h.appUrl}/auth/callback?`)).toBe(true);
  });

  it('§2.3 privilege restriction: a token works only for its own store and scopes', async () => {
    const other = await platformInstall(platform, { scopes: ['read_products'] });
    const inst = await h.kit.installations.get(h.storeId);
    const crossStore = await fetch(`${platform.apiUrl}/products?limit=1`, {
      headers: { authorization: `Bearer ${inst!.accessToken}`, 'x-store-id': other.storeId },
    });
    expect(crossStore.status).toBe(403);
    expect(await crossStore.json()).toMatchObject({ code: 'store_mismatch' });
    const beyondScope = await fetch(`${platform.apiUrl}/customers?limit=1`, {
      headers: { authorization: `Bearer ${other.accessToken}`, 'x-store-id': other.storeId },
    });
    expect(beyondScope.status).toBe(403);
    expect(await beyondScope.json()).toMatchObject({ code: 'insufficient_scope' });
  });

  it('§2.1.2 / §2.4 no implicit grant and no password grant', async () => {
    const authorizeUrl = new URL(await begin(h, new Browser()));
    authorizeUrl.searchParams.set('response_type', 'token');
    const implicit = await fetch(authorizeUrl, { redirect: 'manual' });
    expect(implicit.status).toBe(302);
    const location = implicit.headers.get('location')!;
    expect(new URL(location).searchParams.get('error')).toBe('unsupported_response_type');
    expect(location).not.toContain('access_token');
    const password = await postToken({
      grant_type: 'password',
      client_id: h.clientId,
      client_secret: h.clientSecret,
      username: 'merchant',
      password: 'secret',
    });
    expect(password.status).toBe(400);
    expect(await password.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });

  it('§2.5 client authentication: the token endpoint refuses a wrong or missing client secret', async () => {
    const { verifier, challenge } = pkce();
    const u = new URL(await begin(h, new Browser()));
    u.searchParams.set('code_challenge', challenge);
    const code = new URL(
      platform.approveInstall({ authorizeUrl: u.toString(), storeId: h.storeId }),
    ).searchParams.get('code')!;
    const base = {
      grant_type: 'authorization_code',
      client_id: h.clientId,
      code,
      code_verifier: verifier,
      redirect_uri: `${h.appUrl}/auth/callback`,
    };
    const wrong = await postToken({ ...base, client_secret: `${h.clientSecret}x` });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    const missing = await postToken(base);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('§4.7.1 cookie flags: the state binding and session cookies are HttpOnly, SameSite and scoped; Secure on HTTPS', async () => {
    const { begun, callback } = await installVia(plain);
    const binding = begun.headers.getSetCookie().find((c) => c.startsWith('store_app_oauth='));
    expect(binding).toMatch(/; Max-Age=600;/);
    expect(binding).toMatch(/; Path=\/auth;/);
    expect(binding).toMatch(/; HttpOnly/);
    expect(binding).toMatch(/; SameSite=Lax/);
    const sid = callback.headers.getSetCookie().find((c) => c.startsWith('store_app.sid='));
    expect(sid).toMatch(/; HttpOnly/);
    expect(sid).toMatch(/; SameSite=Lax/);
    expect(sid).toMatch(/; Path=\//);
    expect(`${binding}${sid}`).not.toMatch(/Secure/);

    // The same app on an HTTPS URL (behind a TLS-terminating proxy): Secure everywhere.
    const appUrl = 'https://app.example.test';
    const creds = platform.registerApp({
      name: 'HTTPS app',
      redirectUri: `${appUrl}/auth/callback`,
      webhookUrl: `${appUrl}/webhooks`,
      scopes: ['read_products'],
    });
    const kit = await storeApp({
      appUrl,
      environment: 'test',
      oauth: {
        clientId: creds.clientId,
        clientSecret: creds.clientSecret,
        scopes: ['read_products'],
        authUrl: platform.authUrl,
      },
      storage: { databaseUrl: join(dir, 'https.db'), encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: creds.webhookSecret },
      embedded: { enabled: false },
      logger: { level: 'silent' },
    });
    try {
      const app = express();
      app.use(kit.middleware());
      const res = await request(app).get(`/auth?store_id=${plain.storeId}`);
      expect(res.status).toBe(302);
      const secure = (res.headers['set-cookie'] as unknown as string[]).find((c) =>
        c.startsWith('store_app_oauth='),
      );
      expect(secure).toMatch(/; Secure/);
      expect(secure).toMatch(/; HttpOnly/);
    } finally {
      await kit.close();
    }
  });
});
