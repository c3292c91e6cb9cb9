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

describe('startPlatform', () => {
  it('listens on a free loopback port and exposes its URLs', () => {
    expect(platform.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(platform.apiUrl).toBe(`${platform.url}/api/v1`);
    expect(platform.adminUrl).toBe(`${platform.url}/admin`);
    expect(platform.dashboardUrl).toBe(`${platform.url}/dashboard`);
  });

  it('completes authorize → approve → token → API call → session → refresh', async () => {
    const inst = await install(platform, { scopes: ['read_products', 'read_store_settings'] });
    const api = await fetch(`${platform.apiUrl}/stores/current`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
    });
    expect(api.status).toBe(200);
    expect(api.headers.get('x-ratelimit-limit')).toBe('1000');

    const session = await fetch(`${platform.authUrl}/oauth/session`, {
      headers: { authorization: `Bearer ${inst.accessToken}` },
    });
    expect(session.status).toBe(200);
    const info = (await session.json()) as Record<string, unknown>;
    expect(info).toEqual({
      store_id: inst.storeId,
      app_id: inst.appId,
      scopes: ['read_products', 'read_store_settings'],
      expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });

    const refreshed = await postToken(platform, {
      grant_type: 'refresh_token',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      refresh_token: inst.refreshToken,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 86400,
      scope: 'read_products,read_store_settings',
      store_id: inst.storeId,
    });
    expect(refreshed.body['refresh_token']).not.toBe(inst.refreshToken);
    expect(refreshed.headers.get('cache-control')).toBe('no-store');
    expect(platform.stats().tokenRequests).toEqual({ authorization_code: 1, refresh_token: 1 });
  });

  it('returns exactly the document token response for the code exchange', async () => {
    const app = platform.registerApp({
      name: 'Shape',
      redirectUri: REDIRECT,
      webhookUrl: 'https://hooks.example/w',
      scopes: ['read_orders'],
    });
    const { storeId } = platform.createStore();
    const { verifier, challenge } = pkce();
    const cb = new URL(
      platform.approveInstall({
        storeId,
        authorizeUrl: authorizeUrl(platform, {
          client_id: app.clientId,
          redirect_uri: REDIRECT,
          scope: 'read_orders',
          state: 'xyz',
          response_type: 'code',
          code_challenge: challenge,
          code_challenge_method: 'S256',
        }),
      }),
    );
    expect(cb.origin + cb.pathname).toBe(REDIRECT);
    expect(cb.searchParams.get('state')).toBe('xyz');
    expect(cb.searchParams.get('store_id')).toBe(storeId);
    const res = await postToken(platform, {
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code: cb.searchParams.get('code')!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      ['access_token', 'expires_in', 'refresh_token', 'scope', 'store_id', 'token_type'].sort(),
    );
    expect(res.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 86400,
      scope: 'read_orders',
      store_id: storeId,
    });
  });
});
