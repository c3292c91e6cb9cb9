/**
 * requestToken against a stub fetch: no network. Each case pins one rule of
 * docs/platform-contract.md (tolerant on missing fields, strict on types).
 */
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/oauth/errors.js';
import { requestToken, type TokenEndpointConfig } from '../../src/oauth/token-endpoint.js';

const endpoint: TokenEndpointConfig = {
  url: 'https://auth.example/oauth/token',
  clientId: 'app_1',
  clientSecret: 'super-secret-value-123',
  encoding: 'json',
};
const exchange = {
  grant_type: 'authorization_code' as const,
  code: 'the-code',
  redirect_uri: 'https://app.example/auth/callback',
  code_verifier: 'v'.repeat(43),
};
const storeId = '11111111-1111-4111-8111-111111111111';

interface Seen {
  url: string;
  init: RequestInit;
}

function stub(
  status: number,
  body: unknown,
  seen: Seen[] = [],
  headers: Record<string, string> = {},
) {
  return (async (url: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: String(url), init: init! });
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return new Response(text, {
      status,
      headers: { 'content-type': 'application/json', ...headers },
    });
  }) as typeof fetch;
}

async function fail(p: Promise<unknown>): Promise<OAuthError> {
  const err = await p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OAuthError);
  return err as OAuthError;
}

const full = {
  access_token: 'at',
  refresh_token: 'rt',
  token_type: 'Bearer',
  expires_in: 3600,
  scope: 'read_products,read_orders',
  store_id: storeId,
};

describe('requestToken', () => {
  it("returns the response's Date header as serverDate (the platform's clock), null when unparseable", async () => {
    const at = (date: string) => async () =>
      new Response(JSON.stringify(full), {
        status: 200,
        headers: { 'content-type': 'application/json', date },
      });
    const dated = await requestToken(endpoint, exchange, {
      fetch: at('Tue, 24 Nov 2026 02:10:07 GMT'),
    });
    expect(dated.serverDate).toEqual(new Date('2026-11-24T02:10:07Z'));
    const garbage = await requestToken(endpoint, exchange, { fetch: at('yesterday-ish') });
    expect(garbage.serverDate).toBeNull();
  });

  it('posts the JSON body of the document and parses a full response', async () => {
    const seen: Seen[] = [];
    const t = await requestToken(endpoint, exchange, { fetch: stub(200, full, seen) });
    expect(t).toEqual({
      accessToken: 'at',
      refreshToken: 'rt',
      expiresIn: 3600,
      scopes: ['read_products', 'read_orders'],
      scopeMissing: false,
      storeId,
      tokenType: 'Bearer',
      serverDate: null,
    });
    expect(seen[0]!.init.method).toBe('POST');
    expect(new Headers(seen[0]!.init.headers).get('content-type')).toBe('application/json');
    expect(JSON.parse(String(seen[0]!.init.body))).toEqual({
      ...exchange,
      client_id: 'app_1',
      client_secret: 'super-secret-value-123',
    });
  });

  it('form encoding sends client_secret_post', async () => {
    const seen: Seen[] = [];
    await requestToken(
      { ...endpoint, encoding: 'form' },
      { grant_type: 'refresh_token', refresh_token: 'r1' },
      {
        fetch: stub(200, full, seen),
      },
    );
    expect(new Headers(seen[0]!.init.headers).get('content-type')).toBe(
      'application/x-www-form-urlencoded',
    );
    const body = new URLSearchParams(String(seen[0]!.init.body));
    expect(body.get('grant_type')).toBe('refresh_token');
    expect(body.get('refresh_token')).toBe('r1');
    expect(body.get('client_secret')).toBe('super-secret-value-123');
  });

  it('tolerates missing refresh_token, expires_in and scope', async () => {
    const t = await requestToken(endpoint, exchange, { fetch: stub(200, { access_token: 'at' }) });
    expect(t.refreshToken).toBeNull();
    expect(t.expiresIn).toBe(86_400);
    expect(t.scopes).toEqual([]);
    expect(t.scopeMissing).toBe(true);
    expect(t.storeId).toBeNull();
    expect(t.tokenType).toBe('Bearer');
  });

  it('accepts space-separated scopes too', async () => {
    const t = await requestToken(endpoint, exchange, {
      fetch: stub(200, { ...full, scope: 'read_products read_orders' }),
    });
    expect(t.scopes).toEqual(['read_products', 'read_orders']);
  });

  it.each([
    ['access_token missing', { token_type: 'Bearer' }],
    ['access_token a number', { ...full, access_token: 5 }],
    ['expires_in a string', { ...full, expires_in: '3600' }],
    ['expires_in negative', { ...full, expires_in: -1 }],
    ['scope an array', { ...full, scope: ['read_products'] }],
    ['refresh_token an object', { ...full, refresh_token: {} }],
    ['token_type not Bearer', { ...full, token_type: 'mac' }],
    ['an array', [full]],
    ['null', null],
  ])('refuses a response with %s as TOKEN_RESPONSE_INVALID', async (_what, body) => {
    const err = await fail(requestToken(endpoint, exchange, { fetch: stub(200, body) }));
    expect(err.code).toBe('TOKEN_RESPONSE_INVALID');
    expect(err.retryable).toBe(false);
  });

  it('refuses HTML as TOKEN_RESPONSE_INVALID', async () => {
    const err = await fail(
      requestToken(endpoint, exchange, {
        fetch: stub(200, '<html>oops</html>', [], { 'content-type': 'text/html' }),
      }),
    );
    expect(err.code).toBe('TOKEN_RESPONSE_INVALID');
  });

  it.each([
    [400, 'invalid_grant'],
    [401, 'invalid_client'],
    [400, 'invalid_scope'],
    [400, 'unsupported_grant_type'],
  ])(
    'a %i with error %s becomes that code, with method and path but no body',
    async (status, error) => {
      const err = await fail(
        requestToken(endpoint, exchange, {
          fetch: stub(status, { error, error_description: 'code the-code is bad' }),
        }),
      );
      expect(err.code).toBe(error);
      expect(err.status).toBe(status);
      expect(err.method).toBe('POST');
      expect(err.path).toBe('/oauth/token');
      expect(err.retryable).toBe(false);
      expect(err.message).not.toContain('the-code');
    },
  );

  it('a 4xx without an OAuth error body is TOKEN_RESPONSE_INVALID', async () => {
    const err = await fail(requestToken(endpoint, exchange, { fetch: stub(404, 'Not found') }));
    expect(err.code).toBe('TOKEN_RESPONSE_INVALID');
  });

  it.each([500, 502, 503, 429])(
    'a %i is TOKEN_ENDPOINT_UNAVAILABLE and retryable',
    async (status) => {
      const err = await fail(
        requestToken(endpoint, exchange, { fetch: stub(status, { error: 'x' }) }),
      );
      expect(err.code).toBe('TOKEN_ENDPOINT_UNAVAILABLE');
      expect(err.retryable).toBe(true);
    },
  );

  it('a network error is TOKEN_ENDPOINT_UNAVAILABLE without the secret in message or cause', async () => {
    const failing = (async () => {
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
    }) as typeof fetch;
    const err = await fail(requestToken(endpoint, exchange, { fetch: failing }));
    expect(err.code).toBe('TOKEN_ENDPOINT_UNAVAILABLE');
    expect(err.retryable).toBe(true);
    expect(JSON.stringify({ m: err.message, c: String(err.cause) })).not.toContain('super-secret');
  });

  it('a timeout is TOKEN_ENDPOINT_UNAVAILABLE', async () => {
    const hanging = ((_u: unknown, init?: RequestInit) =>
      new Promise((_resolve, reject) => {
        init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason));
      })) as typeof fetch;
    const err = await fail(requestToken(endpoint, exchange, { fetch: hanging, timeoutMs: 20 }));
    expect(err.code).toBe('TOKEN_ENDPOINT_UNAVAILABLE');
    expect(err.retryable).toBe(true);
  });

  it("the caller's abort rethrows the caller's reason", async () => {
    const hanging = ((_u: unknown, init?: RequestInit) =>
      new Promise((_resolve, reject) => {
        init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason));
      })) as typeof fetch;
    const ac = new AbortController();
    const p = requestToken(endpoint, exchange, { fetch: hanging, signal: ac.signal });
    const reason = new Error('stop');
    ac.abort(reason);
    await expect(p).rejects.toBe(reason);
  });
});
