import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { REDIRECT } from './helpers.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform.close();
});

const insecure = { [oauth.allowInsecureRequests]: true };

it.each([
  ['client_secret_basic', oauth.ClientSecretBasic],
  ['client_secret_post', oauth.ClientSecretPost],
] as const)(
  'an off-the-shelf client completes code + PKCE + refresh (%s)',
  async (_name, method) => {
    const creds = platform.registerApp({
      name: 'oauth4webapi',
      redirectUri: REDIRECT,
      webhookUrl: 'https://hooks.example/w',
      scopes: ['read_products', 'read_orders'],
    });
    const { storeId } = platform.createStore({ name: 'Interop' });

    const issuer = new URL(platform.authUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    const client: oauth.Client = { client_id: creds.clientId };
    const clientAuth = method(creds.clientSecret);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authUrl = new URL(as.authorization_endpoint!);
    authUrl.searchParams.set('client_id', client.client_id);
    authUrl.searchParams.set('redirect_uri', REDIRECT);
    authUrl.searchParams.set('response_type', 'code');
    authUrl.searchParams.set('scope', 'read_products,read_orders');
    authUrl.searchParams.set('state', state);
    authUrl.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    authUrl.searchParams.set('code_challenge_method', 'S256');

    // The merchant's browser: consent page, then Approve.
    const page = await fetch(authUrl, { redirect: 'manual' });
    expect(page.status).toBe(200);
    const requestId = /name="request_id" value="([^"]+)"/.exec(await page.text())?.[1];
    const decision = await fetch(`${platform.authUrl}/oauth/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: platform.url },
      body: new URLSearchParams({ request_id: requestId!, decision: 'approve', store_id: storeId }),
    });
    expect(decision.status).toBe(302);
    const callback = new URL(decision.headers.get('location')!);

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth,
        params,
        REDIRECT,
        verifier,
        insecure,
      ),
    );
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(86400);
    expect(tokens['store_id']).toBe(storeId);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    const session = await fetch(`${platform.authUrl}/oauth/session`, {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(((await session.json()) as { store_id: string }).store_id).toBe(storeId);
  },
);
