import { describe, expect, it } from 'vitest';
import { ConfigErrors, resolveConfig, type StoreAppOptions } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import { ConfigError } from '../../src/errors/index.js';

const KEY = generateKey();
const ENV = {
  STORE_APP_CLIENT_ID: 'app_env',
  STORE_APP_CLIENT_SECRET: 'env-secret-0123456789',
  STORE_APP_SCOPES: 'read_products, read_orders',
  STORE_APP_URL: 'https://app.example.com',
  STORE_AUTH_URL: 'https://auth.example.com',
  STORE_APP_ENCRYPTION_KEYS: KEY,
  STORE_APP_SESSION_SECRET: 's'.repeat(32),
  STORE_APP_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
};

function problem(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

function settings(err: ConfigError): string[] {
  return err instanceof ConfigErrors ? err.problems.map((p) => p.setting) : [err.setting];
}

describe('resolveConfig', () => {
  it('reads every setting from the environment, with defaults', () => {
    const c = resolveConfig({}, ENV);
    expect(c.oauth.clientId).toBe('app_env');
    expect(c.oauth.clientSecret).toBe('env-secret-0123456789');
    expect(c.oauth.scopes).toEqual(['read_products', 'read_orders']);
    expect(c.appUrl).toBe('https://app.example.com');
    expect(c.oauth.authorizeUrl).toBe('https://auth.example.com/oauth/authorize');
    expect(c.oauth.tokenUrl).toBe('https://auth.example.com/oauth/token');
    expect(c.oauth.refreshUrl).toBe('https://auth.example.com/oauth/token');
    expect(c.oauth.sessionCheckUrl).toBe('https://auth.example.com/oauth/session');
    expect(c.oauth.apiUrl).toBe('https://auth.example.com/api/v1');
    expect(c.client.baseUrl).toBe('https://auth.example.com/api/v1');
    expect(c.storage.databaseUrl).toBe('./data/store-app.db');
    expect(c.storage.target.dialect).toBe('sqlite');
    expect(c.storage.encryptionKeys).toEqual([KEY]);
    expect(c.storage.migrate).toBe(true);
    expect(c.auth.redirectUri).toBe('https://app.example.com/auth/callback');
    expect(c.webhooks.secrets).toEqual([ENV.STORE_APP_WEBHOOK_SECRET]);
    expect(c.environment).toBe('production');
    // Embedded over HTTPS: cross-site iframe cookies.
    expect(c.session).toMatchObject({ secure: true, sameSite: 'none', partitioned: true });
    expect(c.embedded.adminOrigin).toBe('https://auth.example.com');
  });

  it('lets options win over the environment', () => {
    const c = resolveConfig(
      {
        appUrl: 'https://other.example/base/',
        oauth: {
          clientId: 'app_opt',
          scopes: ['read_analytics'],
          apiUrl: 'https://api.example/api/v1',
          tokenPath: '/token',
        },
        storage: { databaseUrl: 'postgres://u@db/x' },
        auth: { callbackPath: '/oauth/cb' },
      },
      { ...ENV, STORE_API_URL: 'https://ignored.example/api/v1', DATABASE_URL: './ignored.db' },
    );
    expect(c.oauth.clientId).toBe('app_opt');
    expect(c.oauth.scopes).toEqual(['read_analytics']);
    expect(c.oauth.apiUrl).toBe('https://api.example/api/v1');
    expect(c.oauth.tokenUrl).toBe('https://auth.example.com/token');
    expect(c.storage.target.dialect).toBe('postgres');
    // A base path in the app URL is kept in the redirect URI.
    expect(c.auth.redirectUri).toBe('https://other.example/base/oauth/cb');
  });

  it.each([
    ['STORE_APP_CLIENT_ID', { STORE_APP_CLIENT_ID: undefined }],
    ['STORE_APP_CLIENT_SECRET', { STORE_APP_CLIENT_SECRET: '' }],
    ['STORE_APP_SCOPES', { STORE_APP_SCOPES: undefined }],
    ['STORE_APP_URL', { STORE_APP_URL: 'not a url' }],
    ['STORE_AUTH_URL', { STORE_AUTH_URL: undefined }],
    ['STORE_APP_SESSION_SECRET', { STORE_APP_SESSION_SECRET: 'short' }],
    ['STORE_APP_WEBHOOK_SECRET', { STORE_APP_WEBHOOK_SECRET: undefined }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
  ])('names %s when it is wrong', (setting, patch) => {
    const err = problem(() => resolveConfig({}, { ...ENV, ...patch }));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.setting).toBe(setting);
    expect(err.message).toContain(setting);
  });

  it('a key of the wrong length names keygen', () => {
    const err = problem(() =>
      resolveConfig(
        {},
        { ...ENV, STORE_APP_ENCRYPTION_KEYS: Buffer.alloc(16).toString('base64url') },
      ),
    );
    expect(err.setting).toBe('STORE_APP_ENCRYPTION_KEYS');
    expect(err.message).toContain('npx store-app keygen');
  });

  it('refuses unknown scopes, listing the valid ones', () => {
    const err = problem(() =>
      resolveConfig({}, { ...ENV, STORE_APP_SCOPES: 'read_products,read_everything' }),
    );
    expect(err.setting).toBe('STORE_APP_SCOPES');
    expect(err.message).toContain('read_everything');
    expect(err.message).toContain('read_store_settings');
  });

  it('refuses plain HTTP outside loopback unless development or test', () => {
    const env = { ...ENV, STORE_APP_URL: 'http://app.example.com' };
    expect(problem(() => resolveConfig({}, env)).setting).toBe('STORE_APP_URL');
    expect(resolveConfig({}, { ...env, NODE_ENV: 'development' }).appUrl).toBe(
      'http://app.example.com',
    );
    expect(resolveConfig({ environment: 'test' }, env).appUrl).toBe('http://app.example.com');
    const loop = resolveConfig(
      {},
      { ...ENV, STORE_APP_URL: 'http://127.0.0.1:3000', STORE_AUTH_URL: 'http://localhost:4400' },
    );
    expect(loop.appUrl).toBe('http://127.0.0.1:3000');
    // No Secure cookie over plain HTTP: the browser would drop SameSite=None.
    expect(loop.session).toMatchObject({ secure: false, sameSite: 'lax', partitioned: false });
  });

  it('reports every problem at once', () => {
    const err = problem(() =>
      resolveConfig(
        { oauth: { tokenRequestEncoding: 'xml' as 'json' } },
        {
          STORE_APP_URL: 'https://app.example.com',
        },
      ),
    );
    expect(err).toBeInstanceOf(ConfigErrors);
    expect(settings(err)).toEqual(
      expect.arrayContaining([
        'STORE_AUTH_URL',
        'STORE_APP_CLIENT_ID',
        'STORE_APP_CLIENT_SECRET',
        'STORE_APP_SCOPES',
        'oauth.tokenRequestEncoding',
        'STORE_APP_ENCRYPTION_KEYS',
        'STORE_APP_SESSION_SECRET',
        'STORE_APP_WEBHOOK_SECRET',
      ]),
    );
  });

  it('never puts a secret value in an error message', () => {
    const secret = 'x'.repeat(20);
    const err = problem(() =>
      resolveConfig(
        {},
        { ...ENV, STORE_APP_SESSION_SECRET: secret, STORE_APP_ENCRYPTION_KEYS: 'abc!' },
      ),
    );
    expect(err.message).not.toContain(secret);
    expect(err.message).not.toContain('abc!');
  });

  it.each<[string, StoreAppOptions]>([
    ['auth.path', { auth: { path: 'auth' } }],
    ['oauth.tokenTimeoutMs', { oauth: { tokenTimeoutMs: -1 } }],
    ['embedded.adminOrigin', { embedded: { adminOrigin: 'nope' } }],
    ['logger.level', { logger: { level: 'loud' as 'info' } }],
    ['client.tier', { client: { tier: 'gold' as 'elite' } }],
  ])('validates %s', (setting, options) => {
    expect(problem(() => resolveConfig(options, ENV)).setting).toBe(setting);
  });
});
