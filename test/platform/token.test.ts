import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { authorizeUrl, install, pkce, postToken, REDIRECT } from './helpers.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform.close();
});

function code(app: { clientId: string }, storeId: string, challenge: string): string {
  const cb = platform.approveInstall({
    storeId,
    authorizeUrl: authorizeUrl(platform, {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      scope: 'read_products,read_store_settings',
      state: 's',
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  });
  return new URL(cb).searchParams.get('code')!;
}

function newApp() {
  return platform.registerApp({
    name: 'Token app',
    redirectUri: REDIRECT,
    webhookUrl: 'https://hooks.example/w',
    scopes: ['read_products', 'read_store_settings'],
  });
}

async function apiStatus(
  token: string,
  storeId: string,
): Promise<{ status: number; code: unknown }> {
  const res = await fetch(`${platform.apiUrl}/stores/current`, {
    headers: { authorization: `Bearer ${token}`, 'x-store-id': storeId },
  });
  const body = (await res.json()) as { code?: unknown };
  return { status: res.status, code: body.code };
}

describe('authorization_code grant', () => {
  it('accepts the RFC 7636 Appendix B verifier for its challenge', async () => {
    const app = newApp();
    const { storeId } = platform.createStore();
    const c = code(app, storeId, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    const res = await postToken(platform, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code: c,
      redirect_uri: REDIRECT,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    });
    expect(res.status).toBe(200);
  });

  it('accepts RFC 6749 form encoding with client_secret_basic and client_secret_post', async () => {
    const app = newApp();
    const { storeId } = platform.createStore();
    const p1 = pkce();
    const basic = await postToken(
      platform,
      {
        grant_type: 'authorization_code',
        code: code(app, storeId, p1.challenge),
        redirect_uri: REDIRECT,
        code_verifier: p1.verifier,
      },
      { form: true, basic: [app.clientId, app.clientSecret] },
    );
    expect(basic.status).toBe(200);
    const p2 = pkce();
    const post = await postToken(
      platform,
      {
        grant_type: 'authorization_code',
        client_id: app.clientId,
        client_secret: app.clientSecret,
        code: code(app, storeId, p2.challenge),
        redirect_uri: REDIRECT,
        code_verifier: p2.verifier,
      },
      { form: true },
    );
    expect(post.status).toBe(200);
    expect(post.body['scope']).toBe('read_products,read_store_settings');
  });

  it('invalid_client 401 for a wrong secret, an unknown client and missing credentials', async () => {
    const app = newApp();
    const base = {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
      code_verifier: 'v'.repeat(43),
    };
    const wrong = await postToken(platform, {
      ...base,
      client_id: app.clientId,
      client_secret: 'nope',
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    expect(JSON.stringify(wrong.body)).not.toContain(app.clientSecret);
    const unknown = await postToken(platform, {
      ...base,
      client_id: 'app_unknown',
      client_secret: 'x',
    });
    expect(unknown.status).toBe(401);
    const missing = await postToken(platform, { ...base, client_id: app.clientId });
    expect(missing.status).toBe(401);
    const basic = await postToken(platform, base, { basic: [app.clientId, 'wrong'] });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic /);
  });

  it('invalid_grant 400: reused code, tokens unchanged (the document, by default)', async () => {
    const inst = await install(platform);
    const again = await postToken(platform, {
      grant_type: 'authorization_code',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      code: inst.code,
      redirect_uri: REDIRECT,
      code_verifier: inst.verifier,
    });
    expect(again.status).toBe(400);
    expect(again.body['error']).toBe('invalid_grant');
    expect((await apiStatus(inst.accessToken, inst.storeId)).status).toBe(200);
  });

  it('invalid_grant 400: reused code also revokes its tokens with revokeOnCodeReplay (RFC 6749 §4.1.2)', async () => {
    const rfc = await startPlatform({ revokeOnCodeReplay: true });
    try {
      const inst = await install(rfc);
      const again = await postToken(rfc, {
        grant_type: 'authorization_code',
        client_id: inst.clientId,
        client_secret: inst.clientSecret,
        code: inst.code,
        redirect_uri: REDIRECT,
        code_verifier: inst.verifier,
      });
      expect(again.status).toBe(400);
      expect(again.body['error']).toBe('invalid_grant');
      const res = await fetch(`${rfc.apiUrl}/stores/current`, {
        headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { code: string }).code).toBe('token_revoked');
      const refresh = await postToken(rfc, {
        grant_type: 'refresh_token',
        client_id: inst.clientId,
        client_secret: inst.clientSecret,
        refresh_token: inst.refreshToken,
      });
      expect(refresh.body['error']).toBe('invalid_grant');
    } finally {
      await rfc.close();
    }
  });

  it("answers with the platform clock's Date header", async () => {
    const own = await startPlatform();
    try {
      own.advanceClock(-600);
      const res = await fetch(`${own.url}/.well-known/oauth-authorization-server`);
      const date = new Date(res.headers.get('date')!).getTime();
      expect(Math.abs(date - (Date.now() - 600_000))).toBeLessThan(5_000);
    } finally {
      await own.close();
    }
  });

  it('invalid_grant 400: expired code, wrong verifier, other redirect_uri, other client, unknown code', async () => {
    const app = newApp();
    const other = newApp();
    const { storeId } = platform.createStore();
    const p = pkce();
    const body = (c: string, over: Record<string, string> = {}) => ({
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code: c,
      redirect_uri: REDIRECT,
      code_verifier: p.verifier,
      ...over,
    });
    const c1 = code(app, storeId, p.challenge);
    expect(
      (await postToken(platform, body(c1, { code_verifier: pkce().verifier }))).body['error'],
    ).toBe('invalid_grant');
    expect(
      (await postToken(platform, body(c1, { redirect_uri: `${REDIRECT}?x=1` }))).body['error'],
    ).toBe('invalid_grant');
    expect(
      (
        await postToken(
          platform,
          body(c1, { client_id: other.clientId, client_secret: other.clientSecret }),
        )
      ).body['error'],
    ).toBe('invalid_grant');
    expect((await postToken(platform, body('unknown-code'))).status).toBe(400);
    // Failed attempts do not consume the code.
    expect((await postToken(platform, body(c1))).status).toBe(200);

    const c2 = code(app, storeId, p.challenge);
    platform.advanceClock(61);
    const expired = await postToken(platform, body(c2));
    expect(expired.status).toBe(400);
    expect(expired.body['error']).toBe('invalid_grant');
  });

  it('invalid_request for missing or malformed fields, unsupported_grant_type, bad JSON, wrong content type', async () => {
    const app = newApp();
    const auth = { client_id: app.clientId, client_secret: app.clientSecret };
    const missing = await postToken(platform, {
      ...auth,
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
    });
    expect(missing).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const shortVerifier = await postToken(platform, {
      ...auth,
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
      code_verifier: 'too-short',
    });
    expect(shortVerifier.body['error']).toBe('invalid_request');
    const noGrant = await postToken(platform, auth);
    expect(noGrant.body['error']).toBe('invalid_request');
    const grant = await postToken(platform, { ...auth, grant_type: 'password' });
    expect(grant).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    const badJson = await fetch(`${platform.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"grant_type":',
    });
    expect(badJson.status).toBe(400);
    expect(((await badJson.json()) as { error: string }).error).toBe('invalid_request');
    const get = await fetch(`${platform.authUrl}/oauth/token`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const text = await fetch(`${platform.authUrl}/oauth/token`, { method: 'POST', body: 'hello' });
    expect(text.status).toBe(400);
    const twoMethods = await postToken(
      platform,
      { ...auth, grant_type: 'refresh_token', refresh_token: 'x' },
      {
        basic: [app.clientId, app.clientSecret],
      },
    );
    expect(twoMethods.body['error']).toBe('invalid_request');
  });

  it('a reinstall replaces the previous tokens', async () => {
    const first = await install(platform);
    const p = pkce();
    const c = code(first, first.storeId, p.challenge);
    const res = await postToken(platform, {
      grant_type: 'authorization_code',
      client_id: first.clientId,
      client_secret: first.clientSecret,
      code: c,
      redirect_uri: REDIRECT,
      code_verifier: p.verifier,
    });
    expect(res.status).toBe(200);
    expect(await apiStatus(first.accessToken, first.storeId)).toEqual({
      status: 401,
      code: 'token_revoked',
    });
    expect((await apiStatus(res.body['access_token'] as string, first.storeId)).status).toBe(200);
  });
});

describe('refresh_token grant', () => {
  function refresh(inst: { clientId: string; clientSecret: string }, refreshToken: string) {
    return postToken(platform, {
      grant_type: 'refresh_token',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      refresh_token: refreshToken,
    });
  }

  it('renews an expired access token', async () => {
    const inst = await install(platform);
    platform.advanceClock(86400);
    expect(await apiStatus(inst.accessToken, inst.storeId)).toEqual({
      status: 401,
      code: 'token_expired',
    });
    const res = await refresh(inst, inst.refreshToken);
    expect(res.status).toBe(200);
    expect((await apiStatus(res.body['access_token'] as string, inst.storeId)).status).toBe(200);
  });

  it('rotates, and the previous refresh token works once within the grace period', async () => {
    const inst = await install(platform);
    const r1 = await refresh(inst, inst.refreshToken);
    expect(r1.status).toBe(200);
    const grace = await refresh(inst, inst.refreshToken);
    expect(grace.status).toBe(200);
    const third = await refresh(inst, inst.refreshToken);
    expect(third).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // The newest refresh tokens still work.
    expect((await refresh(inst, r1.body['refresh_token'] as string)).status).toBe(200);
  });

  it('refuses the previous refresh token after the grace period', async () => {
    const inst = await install(platform);
    expect((await refresh(inst, inst.refreshToken)).status).toBe(200);
    platform.advanceClock(61);
    expect((await refresh(inst, inst.refreshToken)).body['error']).toBe('invalid_grant');
  });

  it('refuses a refresh token of another app, an unknown one and one after uninstall', async () => {
    const inst = await install(platform);
    const other = newApp();
    expect((await refresh(other, inst.refreshToken)).body['error']).toBe('invalid_grant');
    expect((await refresh(inst, 'sprt_unknown')).body['error']).toBe('invalid_grant');
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    expect((await refresh(inst, inst.refreshToken)).body['error']).toBe('invalid_grant');
  });

  it('refuses a scope wider than granted with invalid_scope', async () => {
    const inst = await install(platform, { scopes: ['read_products'] });
    const res = await postToken(platform, {
      grant_type: 'refresh_token',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      refresh_token: inst.refreshToken,
      scope: 'read_products,write_products',
    });
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
  });
});

describe('refresh without rotation', () => {
  it('keeps returning the same refresh token', async () => {
    const p = await startPlatform({ refreshTokenRotation: false });
    try {
      const inst = await install(p);
      for (let i = 0; i < 3; i++) {
        const res = await postToken(p, {
          grant_type: 'refresh_token',
          client_id: inst.clientId,
          client_secret: inst.clientSecret,
          refresh_token: inst.refreshToken,
        });
        expect(res.status).toBe(200);
        expect(res.body['refresh_token']).toBe(inst.refreshToken);
      }
    } finally {
      await p.close();
    }
  });
});

describe('GET /oauth/session', () => {
  it('answers 401 with the API error body for unknown, expired and revoked tokens', async () => {
    const inst = await install(platform);
    const check = async (token: string | undefined) => {
      const res = await fetch(`${platform.authUrl}/oauth/session`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      return {
        status: res.status,
        www: res.headers.get('www-authenticate'),
        body: (await res.json()) as Record<string, unknown>,
      };
    };
    const none = await check(undefined);
    expect(none).toMatchObject({ status: 401, body: { code: 'invalid_token', details: [] } });
    expect(none.www).toBe('Bearer error="invalid_token"');
    expect((await check('spat_unknown')).body['code']).toBe('invalid_token');
    platform.advanceClock(86400);
    expect((await check(inst.accessToken)).body['code']).toBe('token_expired');
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    expect((await check(inst.accessToken)).body['code']).toBe('token_revoked');
  });
});

describe('uninstall and outstanding codes', () => {
  it('voids a code approved before the uninstall', async () => {
    const inst = await install(platform);
    const p = pkce();
    const c = code(inst, inst.storeId, p.challenge);
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const res = await postToken(platform, {
      grant_type: 'authorization_code',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      code: c,
      redirect_uri: REDIRECT,
      code_verifier: p.verifier,
    });
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });
});

describe('stats()', () => {
  it('counts token-endpoint calls per grant, failed ones included', async () => {
    const p = await startPlatform();
    try {
      const inst = await install(p);
      await postToken(p, {
        grant_type: 'refresh_token',
        client_id: inst.clientId,
        client_secret: 'wrong',
        refresh_token: 'x',
      });
      await postToken(p, {
        grant_type: 'refresh_token',
        client_id: inst.clientId,
        client_secret: inst.clientSecret,
        refresh_token: inst.refreshToken,
      });
      expect(p.stats()).toEqual({ tokenRequests: { authorization_code: 1, refresh_token: 2 } });
    } finally {
      await p.close();
    }
  });
});
