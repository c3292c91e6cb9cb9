import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  generateSecrets,
  parseEnv,
  renderEnv,
  renderEnvExample,
} from '../../create-app/src/secrets.js';
import { resolveClientOptions } from '../../src/client/options.js';
import { ConfigErrors, resolveConfig, type StoreAppOptions } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import { CONFIG_INVALID, ConfigError } from '../../src/errors/index.js';
import { isPlaceholder } from '../../src/options/index.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';

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
    expect(c.oauth.installTimeFromServerDate).toBe(true);
    expect(c.client.maxRateLimitWaitMs).toBe(120_000);
    expect(c.auth.narrowerScopes).toBe('refuse');
    expect(c.securityHeaders.framing).toBe('protected');
    // A guest in an existing app: the kit's headers on its own routes only (issue 32).
    expect(c.securityHeaders.scope).toBe('kit');
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
    ['auth.narrowerScopes', { auth: { narrowerScopes: 'ignore' as 'record' } }],
    ['securityHeaders.framing', { securityHeaders: { framing: 'off' as 'protected' } }],
    ['securityHeaders.scope', { securityHeaders: { scope: 'everywhere' as 'app' } }],
    ['client.maxRateLimitWaitMs', { client: { maxRateLimitWaitMs: -1 } }],
    ['oauth.installTimeFromServerDate', { oauth: { installTimeFromServerDate: 'yes' as never } }],
  ])('validates %s', (setting, options) => {
    expect(problem(() => resolveConfig(options, ENV)).setting).toBe(setting);
  });
});

describe('unknown keys', () => {
  function messageOf(options: unknown): ConfigError {
    return problem(() => resolveConfig(options as StoreAppOptions, ENV));
  }

  it.each<[string, unknown, string, string]>([
    ['a misspelt section', { sesion: { secret: 's'.repeat(32) } }, 'sesion', '`session`'],
    ['a misspelt option', { oauth: { clientID: 'x' } }, 'oauth.clientID', '`oauth.clientId`'],
    [
      'a singular for a plural',
      { webhooks: { secret: 'x' } },
      'webhooks.secret',
      '`webhooks.secrets`',
    ],
    [
      'a nested typo',
      { client: { retries: { maxx: 1 } } },
      'client.retries.maxx',
      '`client.retries.max`',
    ],
    ['a top-level secret', { secret: 's'.repeat(32) }, 'secret', '`session.secret`'],
    ['a path option out of place', { callbackPath: '/cb' }, 'callbackPath', '`auth.callbackPath`'],
  ])('refuses %s with a did-you-mean', (_, options, setting, suggestion) => {
    const err = messageOf(options);
    expect(err.code).toBe(CONFIG_INVALID);
    expect(err.setting).toBe(setting);
    expect(err.message).toContain('did you mean');
    expect(err.message).toContain(suggestion);
  });

  it('lists the valid options when nothing is near', () => {
    const err = messageOf({ zzzz: 1 });
    expect(err.setting).toBe('zzzz');
    expect(err.message).toContain('remove it');
    expect(err.message).toContain('session');
  });

  it('reports unknown keys together with the other problems', () => {
    const err = problem(() =>
      resolveConfig({ sesion: {}, oauth: { scope: 'read_products' } } as never, {
        ...ENV,
        STORE_APP_CLIENT_ID: undefined,
      }),
    );
    expect(settings(err)).toEqual(
      expect.arrayContaining(['sesion', 'oauth.scope', 'STORE_APP_CLIENT_ID']),
    );
  });

  it('never echoes the value under an unknown or mistyped key', () => {
    const secret = 'very-secret-value-0123456789abcdef';
    const err = problem(() =>
      resolveConfig({ secret, oauth: secret, session: { secret: 42 } } as never, ENV),
    );
    expect(err.message).not.toContain(secret);
    expect(settings(err)).toEqual(expect.arrayContaining(['secret', 'oauth', 'session.secret']));
  });

  it('logger takes an instance or a destination, not both (exclusive modes)', () => {
    const instance = pino({ level: 'silent' });
    const destination = new Writable({ write: (_c, _e, cb) => cb() });
    const err = messageOf({ logger: { instance, destination } });
    expect(err.setting).toBe('logger');
    expect(err.message).toMatch(/instance.*destination.*not both/);
    // Each mode alone is fine, and a level typo still gets its suggestion.
    expect(resolveConfig({ logger: { instance } }, ENV).logger.instance).toBe(instance);
    expect(resolveConfig({ logger: { destination } }, ENV).logger.destination).toBe(destination);
    const typo = messageOf({ logger: { levl: 'info' } });
    expect(typo.setting).toBe('logger.levl');
    expect(typo.message).toContain('`logger.level`');
  });
});

describe('environment variables in messages', () => {
  it('names the variable a bad value came from, and the option path when an option set it', () => {
    const fromEnv = problem(() => resolveConfig({}, { ...ENV, STORE_APP_SCOPES: 'read_all' }));
    expect(fromEnv.setting).toBe('STORE_APP_SCOPES');
    const fromOption = problem(() => resolveConfig({ oauth: { scopes: 'read_all' } }, ENV));
    expect(fromOption.setting).toBe('oauth.scopes');
  });

  it('a missing variable whose near spelling is set is called a typo', () => {
    const { STORE_APP_CLIENT_SECRET: _, ...rest } = ENV;
    const err = problem(() =>
      resolveConfig({}, { ...rest, STORE_APP_CLIENT_SECRT: 'env-secret-0123456789' }),
    );
    expect(err.setting).toBe('STORE_APP_CLIENT_SECRET');
    expect(err.message).toContain('is not set');
    expect(err.message).toContain('STORE_APP_CLIENT_SECRT is set');
    expect(err.message).not.toContain('env-secret-0123456789');
  });

  it('a missing session secret is reported once, with the fix', () => {
    const { STORE_APP_SESSION_SECRET: _, ...rest } = ENV;
    const err = problem(() => resolveConfig({}, rest));
    expect(err.setting).toBe('STORE_APP_SESSION_SECRET');
    expect(err.message).toContain('is not set; set STORE_APP_SESSION_SECRET to a random string');
    expect(err.message).not.toMatch(/not set.*not set|no session secret is set/);
  });

  it('an unrelated STORE_APP_ variable is left alone', () => {
    expect(resolveConfig({}, { ...ENV, STORE_APP_LONG_TESTS: '1' }).oauth.clientId).toBe('app_env');
  });
});

describe('DATABASE_URL', () => {
  it.each([
    'postgres//user:pw@db.example.com/app',
    'postgres:/db.example.com/app',
    'postgresql:db.example.com',
    'user:pw@db.example.com:5432/app',
    'mysql://db.example.com',
    'mysql:/db.example.com/app',
    'mongodb://db.example.com/app',
    'sqlite:./app.db',
  ])('%s fails at start naming DATABASE_URL, never a SQLite file', (url) => {
    const err = problem(() => resolveConfig({}, { ...ENV, DATABASE_URL: url }));
    expect(err.code).toBe(CONFIG_INVALID);
    expect(err.setting).toBe('DATABASE_URL');
    // The fix names the URL form to use.
    expect(err.message).toMatch(url.startsWith('mysql') ? /mysql:\/\// : /postgres:\/\//);
    // The password part of a URL never reaches the message.
    expect(err.message).not.toContain('pw@');
  });

  it('storage.purgeRewrite: a rewrite every 30 s by default, false or another interval, a bad one named at start', () => {
    expect(resolveConfig({}, ENV).storage.purgeRewrite).toEqual({ minIntervalMs: 600_000 });
    expect(resolveConfig({ storage: { purgeRewrite: false } }, ENV).storage.purgeRewrite).toBe(
      false,
    );
    expect(
      resolveConfig({ storage: { purgeRewrite: { minIntervalMs: 0 } } }, ENV).storage.purgeRewrite,
    ).toEqual({ minIntervalMs: 0 });
    const err = problem(() =>
      resolveConfig({ storage: { purgeRewrite: { minIntervalMs: -1 } } }, ENV),
    );
    expect(settings(err).join()).toMatch(/^storage\.purgeRewrite/);
  });

  it('names storage.databaseUrl when the option holds it', () => {
    const err = problem(() => resolveConfig({ storage: { databaseUrl: 'postgres//db/app' } }, ENV));
    expect(err.setting).toBe('storage.databaseUrl');
  });

  it.each([
    ['./data/app.db', 'sqlite'],
    ['file:./data/app.db', 'sqlite'],
    ['data/postgres.db', 'sqlite'],
    [':memory:', 'sqlite'],
    ['postgres://u@127.0.0.1:5432/app', 'postgres'],
    ['postgresql://u@127.0.0.1/app', 'postgres'],
  ])('%s is still accepted (%s)', (url, dialect) => {
    expect(resolveConfig({}, { ...ENV, DATABASE_URL: url }).storage.target.dialect).toBe(dialect);
  });
});

describe('.env.example copied without edits', () => {
  it('names every variable that still holds a placeholder, all at once', () => {
    const example = parseEnv(renderEnvExample());
    const err = problem(() => resolveConfig({}, example));
    const named = settings(err);
    for (const name of [
      'STORE_APP_CLIENT_ID',
      'STORE_APP_CLIENT_SECRET',
      'STORE_APP_WEBHOOK_SECRET',
      'STORE_APP_ENCRYPTION_KEYS',
      'STORE_APP_SESSION_SECRET',
    ]) {
      expect(named).toContain(name);
      const p = (err as ConfigErrors).problems.find((x) => x.setting === name);
      expect(p?.message).toContain('placeholder from .env.example');
    }
    // The non-secret values .env.example carries are real, not placeholders.
    expect(named).not.toContain('STORE_APP_URL');
    expect(named).not.toContain('DATABASE_URL');
  });

  it.each(['replace-with-your-secret', 'changeme', '<client-secret>', 'your-client-secret'])(
    'recognises %s as a placeholder',
    (value) => {
      const err = problem(() => resolveConfig({}, { ...ENV, STORE_APP_CLIENT_SECRET: value }));
      expect(err.setting).toBe('STORE_APP_CLIENT_SECRET');
      expect(err.message).toContain('placeholder');
    },
  );
});

describe('module resolvers used on their own', () => {
  it('name the option under their prefix, with the suggestion', () => {
    const err = problem(() => resolveRefreshOptions({ windowSecond: 5 } as never));
    expect(err.setting).toBe('refresh.windowSecond');
    expect(err.message).toContain('`refresh.windowSeconds`');
    expect(problem(() => resolveClientOptions({ timeoutMs: 0 })).setting).toBe('client.timeoutMs');
  });
});

describe('placeholder recognition', () => {
  it('never takes a generated secret for a placeholder', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), () => {
        const s = generateSecrets();
        for (const value of [
          s.clientId,
          s.clientSecret,
          s.encryptionKey,
          s.sessionSecret,
          s.webhookSecret,
        ]) {
          expect(isPlaceholder(value)).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('takes every secret placeholder of .env.example for one', () => {
    const example = parseEnv(renderEnvExample());
    const real = parseEnv(renderEnv(generateSecrets()));
    for (const [name, value] of Object.entries(example)) {
      // Values that are the same in both files are real settings (URLs, scopes, port).
      expect(isPlaceholder(value), name).toBe(value !== real[name]);
    }
  });
});

describe('any input', () => {
  it('an unknown key holding dots or brackets is named as given (no endless lookup)', () => {
    const err = problem(() => resolveConfig({ oauth: { '[a.b': 1 } } as never, ENV));
    expect(err.setting).toBe('oauth.[a.b');
  });

  it('a non-string entry in a key list is refused naming its position', () => {
    const err = problem(() => resolveConfig({ storage: { encryptionKeys: [null] } } as never, ENV));
    expect(err.setting).toBe('storage.encryptionKeys');
    expect(err.message).toContain('key #1');
  });

  const paths = [
    'appUrl',
    'environment',
    'oauth',
    'oauth.clientSecret',
    'oauth.scopes',
    'storage',
    'storage.encryptionKeys',
    'storage.databaseUrl',
    'session.secret',
    'webhooks.secrets',
    'webhooks.headers',
    'logger',
    'client.retries',
    'storeScopedTables',
    'refresh',
    'sesion',
  ];

  it('is resolved or refused with a ConfigError, never a crash', () => {
    fc.assert(
      fc.property(fc.constantFrom(...paths), fc.anything(), (path, value) => {
        const [head, tail] = path.split('.') as [string, string | undefined];
        const options = tail === undefined ? { [head]: value } : { [head]: { [tail]: value } };
        try {
          resolveConfig(options as StoreAppOptions, ENV);
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
          expect((err as ConfigError).code).toBe(CONFIG_INVALID);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

describe('LOG_LEVEL (issue 32 item 10)', () => {
  it('sets the level of the kit’s logger', () => {
    expect(resolveConfig({}, { ...ENV, LOG_LEVEL: 'debug' }).logger.level).toBe('debug');
    expect(resolveConfig({}, ENV).logger.level).toBe('info');
  });

  it('gives way to logger.level, and wins over the level of the app’s own logger', () => {
    const env = { ...ENV, LOG_LEVEL: 'warn' };
    expect(resolveConfig({ logger: { level: 'trace' } }, env).logger.level).toBe('trace');
    const instance = pino({ level: 'info' });
    expect(resolveConfig({ logger: { instance } }, env).logger.level).toBe('warn');
  });

  it('refuses a level it does not know, naming LOG_LEVEL and the levels', () => {
    const err = problem(() => resolveConfig({}, { ...ENV, LOG_LEVEL: 'verbose' }));
    expect(settings(err)).toEqual(['LOG_LEVEL']);
    expect(err.message).toBe(
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent.',
    );
  });
});
