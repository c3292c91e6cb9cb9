import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import { ConfigError } from '../../src/errors/index.js';
import { discoverEndpoints, withDiscoveredEndpoints } from '../../src/oauth/discovery.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';

const AUTH = 'https://auth.example';
const good = {
  issuer: AUTH,
  authorization_endpoint: `${AUTH}/o/authorize`,
  token_endpoint: `${AUTH}/o/token`,
  session_endpoint: `${AUTH}/o/session`,
  code_challenge_methods_supported: ['S256'],
};

function stub(status: number, body: unknown) {
  return (async () =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    })) as unknown as typeof fetch;
}

async function configError(p: Promise<unknown>): Promise<ConfigError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).setting).toBe('oauth.discovery');
  return err as ConfigError;
}

describe('RFC 8414 discovery', () => {
  let platform: Platform;
  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it("reads the local platform's endpoints over a real socket", async () => {
    const found = await discoverEndpoints(platform.authUrl);
    expect(found).toEqual({
      authorizeUrl: `${platform.authUrl}/oauth/authorize`,
      tokenUrl: `${platform.authUrl}/oauth/token`,
      sessionCheckUrl: `${platform.authUrl}/oauth/session`,
    });
  });

  it('replaces default paths but keeps the ones the app set', async () => {
    const c = resolveConfig(
      { oauth: { discovery: true, tokenPath: '/my/token' } },
      {
        STORE_APP_CLIENT_ID: 'a',
        STORE_APP_CLIENT_SECRET: 'b',
        STORE_APP_SCOPES: 'read_products',
        STORE_APP_URL: 'https://app.example',
        STORE_AUTH_URL: AUTH,
        STORE_APP_ENCRYPTION_KEYS: generateKey(),
        STORE_APP_SESSION_SECRET: 'x'.repeat(32),
        STORE_APP_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32).toString('base64')}`,
      },
    );
    const o = await withDiscoveredEndpoints(
      c.oauth,
      { discovery: true, tokenPath: '/my/token' },
      {
        fetch: stub(200, good),
      },
    );
    expect(o.authorizeUrl).toBe(`${AUTH}/o/authorize`);
    expect(o.tokenUrl).toBe(`${AUTH}/my/token`);
    expect(o.refreshUrl).toBe(`${AUTH}/o/token`);
    expect(o.sessionCheckUrl).toBe(`${AUTH}/o/session`);
    // Off by default: nothing fetched, nothing changed.
    const off = { ...c.oauth, discovery: false };
    expect(await withDiscoveredEndpoints(off, {}, { fetch: stub(500, {}) })).toBe(off);
  });

  it.each([
    ['a 404', stub(404, {})],
    ['another issuer', stub(200, { ...good, issuer: 'https://evil.example' })],
    ['no S256', stub(200, { ...good, code_challenge_methods_supported: ['plain'] })],
    ['no token endpoint', stub(200, { ...good, token_endpoint: undefined })],
    ['a plain-HTTP endpoint', stub(200, { ...good, token_endpoint: 'http://auth.example/t' })],
    [
      'a network error',
      (async () => {
        throw new TypeError('fetch failed');
      }) as unknown as typeof fetch,
    ],
  ])('refuses to start on %s', async (_what, f) => {
    await configError(discoverEndpoints(AUTH, { fetch: f }));
  });
});
