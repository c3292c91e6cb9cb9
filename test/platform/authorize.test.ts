import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthorizeRequestError,
  PLATFORM_INVALID_AUTHORIZE,
  PLATFORM_UNKNOWN_STORE,
  type Platform,
  type PlatformError,
  startPlatform,
} from '../../src/platform/index.js';
import { authorizeUrl, pkce, REDIRECT } from './helpers.js';

let platform: Platform;
let app: { clientId: string; clientSecret: string };
let storeId: string;
const { challenge } = pkce();

function params(over: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    client_id: app.clientId,
    redirect_uri: REDIRECT,
    scope: 'read_products,write_products',
    state: 'state-123',
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...over,
  };
}

function path(over: Record<string, string | undefined> = {}): string {
  const url = new URL(authorizeUrl(platform, params(over)));
  return url.pathname + url.search;
}

beforeAll(async () => {
  platform = await startPlatform();
  app = platform.registerApp({
    name: 'Scope <Tester> & "Co"',
    redirectUri: REDIRECT,
    webhookUrl: 'https://hooks.example/w',
    scopes: ['read_products', 'write_products', 'read_orders'],
  });
  storeId = platform.createStore({ name: 'Main <Store>' }).storeId;
});
afterAll(async () => {
  await platform.close();
});

describe('GET /oauth/authorize — errors shown as a page, never redirected', () => {
  it.each([
    ['unknown client_id', { client_id: 'app_nope' }],
    ['missing client_id', { client_id: undefined }],
    ['redirect_uri differing by one byte', { redirect_uri: `${REDIRECT}/` }],
    ['redirect_uri of another host', { redirect_uri: 'https://evil.example/cb' }],
    ['missing redirect_uri', { redirect_uri: undefined }],
  ])('%s → 400 HTML, no Location', async (_name, over) => {
    const res = await request(platform.app).get(path(over));
    expect(res.status).toBe(400);
    expect(res.headers['location']).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/text\/html/);
    // Never followed: no link, form, frame or refresh to it. (A redirect URI that is not
    // registered is shown as text, escaped, beside the registered one: redirect-mismatch.test.ts.)
    expect(res.text).not.toMatch(/(href|src|action|content)="[^"]*evil\.example/i);
  });
});

describe('GET /oauth/authorize — errors redirected with error and state (RFC 6749 §4.1.2.1)', () => {
  it.each([
    [
      'scope not registered for the app',
      { scope: 'read_products,read_customers' },
      'invalid_scope',
    ],
    ['scope not in the Scopes table', { scope: 'read_everything' }, 'invalid_scope'],
    ['empty scope', { scope: ',' }, 'invalid_scope'],
    ['space-separated scopes', { scope: 'read_products write_products' }, 'invalid_scope'],
    ['missing scope', { scope: undefined }, 'invalid_request'],
    ['response_type token', { response_type: 'token' }, 'unsupported_response_type'],
    ['missing response_type', { response_type: undefined }, 'invalid_request'],
    ['code_challenge_method plain', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['missing code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
    ['missing code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['short code_challenge', { code_challenge: 'abc' }, 'invalid_request'],
    [
      'code_challenge with padding',
      { code_challenge: `${challenge.slice(0, 42)}=` },
      'invalid_request',
    ],
    ['unknown store_id', { store_id: '00000000-0000-4000-8000-000000000000' }, 'invalid_request'],
  ])('%s → %s', async (_name, over, error) => {
    const res = await request(platform.app).get(path(over));
    expect(res.status).toBe(302);
    const loc = new URL(res.headers['location'] as string);
    expect(loc.origin + loc.pathname).toBe(REDIRECT);
    expect(loc.searchParams.get('error')).toBe(error);
    expect(loc.searchParams.get('state')).toBe('state-123');
    expect(loc.searchParams.get('code')).toBeNull();
  });

  it('missing state → invalid_request without a state', async () => {
    const res = await request(platform.app).get(path({ state: undefined }));
    expect(res.status).toBe(302);
    const loc = new URL(res.headers['location'] as string);
    expect(loc.searchParams.get('error')).toBe('invalid_request');
    expect(loc.searchParams.has('state')).toBe(false);
  });

  it('a repeated parameter → invalid_request', async () => {
    const res = await request(platform.app).get(`${path()}&scope=read_orders`);
    expect(res.status).toBe(302);
    expect(new URL(res.headers['location'] as string).searchParams.get('error')).toBe(
      'invalid_request',
    );
  });
});

describe('consent page and decision', () => {
  async function consent(over: Record<string, string | undefined> = {}) {
    const res = await request(platform.app).get(path(over));
    expect(res.status).toBe(200);
    const requestId = /name="request_id" value="([^"]+)"/.exec(res.text)?.[1];
    expect(requestId).toBeDefined();
    return { res, requestId: requestId! };
  }

  it('shows the app, the store choice and each scope with its meaning, escaped', async () => {
    const { res } = await consent();
    expect(res.text).toContain('Scope &lt;Tester&gt; &amp; &quot;Co&quot;');
    expect(res.text).not.toContain('<Tester>');
    expect(res.text).toContain('Main &lt;Store&gt;');
    expect(res.text).toContain('read_products');
    expect(res.text).toContain('create, update, delete products');
    expect(res.text).toMatch(/value="approve"/);
    expect(res.text).toMatch(/value="deny"/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('Approve → 302 to redirect_uri with code, state and store_id; the code works once', async () => {
    const { requestId } = await consent({ store_id: storeId });
    const res = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: storeId });
    expect(res.status).toBe(302);
    const loc = new URL(res.headers['location'] as string);
    expect(loc.origin + loc.pathname).toBe(REDIRECT);
    expect(loc.searchParams.get('state')).toBe('state-123');
    expect(loc.searchParams.get('store_id')).toBe(storeId);
    expect(loc.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The request id is single use.
    const again = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: storeId });
    expect(again.status).toBe(400);
  });

  it('Deny → 302 with error=access_denied and state', async () => {
    const { requestId } = await consent();
    const res = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: requestId, decision: 'deny' });
    expect(res.status).toBe(302);
    const loc = new URL(res.headers['location'] as string);
    expect(loc.searchParams.get('error')).toBe('access_denied');
    expect(loc.searchParams.get('state')).toBe('state-123');
    expect(loc.searchParams.get('code')).toBeNull();
  });

  it('refuses a cross-site decision (CSRF) and keeps the request usable', async () => {
    const { requestId } = await consent();
    const cross = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: storeId });
    expect(cross.status).toBe(403);
    expect(cross.headers['location']).toBeUndefined();
    const none = await request(platform.app)
      .post('/oauth/authorize/decision')
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: storeId });
    expect(none.status).toBe(403);
    const ok = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: storeId });
    expect(ok.status).toBe(302);
  });

  it('refuses a store other than the one preselected by store_id', async () => {
    const other = platform.createStore({ name: 'Other' }).storeId;
    const { requestId } = await consent({ store_id: storeId });
    const res = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: requestId, decision: 'approve', store_id: other });
    expect(res.status).toBe(400);
    expect(res.headers['location']).toBeUndefined();
  });

  it('an unknown request id → 400 page', async () => {
    const res = await request(platform.app)
      .post('/oauth/authorize/decision')
      .set('Origin', platform.url)
      .type('form')
      .send({ request_id: 'nope', decision: 'approve', store_id: storeId });
    expect(res.status).toBe(400);
  });
});

describe('approveInstall / denyInstall', () => {
  it('validates exactly like GET /oauth/authorize and throws a typed error', () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ client_id: 'app_nope' }, 'invalid_client'],
      [{ redirect_uri: 'https://evil.example/cb' }, 'invalid_redirect_uri'],
      [{ scope: 'read_customers' }, 'invalid_scope'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
    ];
    for (const [over, oauthError] of cases) {
      let caught: unknown;
      try {
        platform.approveInstall({ storeId, authorizeUrl: authorizeUrl(platform, params(over)) });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(AuthorizeRequestError);
      expect((caught as AuthorizeRequestError).code).toBe(PLATFORM_INVALID_AUTHORIZE);
      expect((caught as AuthorizeRequestError).oauthError).toBe(oauthError);
    }
  });

  it('throws PLATFORM_UNKNOWN_STORE for an unknown store', () => {
    expect(() =>
      platform.approveInstall({
        storeId: '00000000-0000-4000-8000-000000000000',
        authorizeUrl: authorizeUrl(platform, params()),
      }),
    ).toThrow(expect.objectContaining({ code: PLATFORM_UNKNOWN_STORE }) as PlatformError);
  });

  it('denyInstall returns the access_denied callback', () => {
    const url = new URL(
      platform.denyInstall({ storeId, authorizeUrl: authorizeUrl(platform, params()) }),
    );
    expect(url.searchParams.get('error')).toBe('access_denied');
    expect(url.searchParams.get('state')).toBe('state-123');
  });
});

describe('authorization server metadata (RFC 8414)', () => {
  it('describes the endpoints and S256', async () => {
    const res = await request(platform.app).get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: platform.url,
      authorization_endpoint: `${platform.url}/oauth/authorize`,
      token_endpoint: `${platform.url}/oauth/token`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    });
  });
});
