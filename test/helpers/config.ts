/**
 * A kit configuration that is complete and valid without any network, for
 * tests of option checks (`resolveConfig`) and of kits that never install.
 */
import { expect } from 'vitest';
import { resolveConfig } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import { ConfigError } from '../../src/errors/index.js';
import type { StoreAppOptionsWithoutAdapter } from '../../src/index.js';

/** Every required setting, as environment variables (a fresh encryption key per call). */
export function validEnv(): Record<string, string> {
  return {
    STORE_APP_CLIENT_ID: 'app_env',
    STORE_APP_CLIENT_SECRET: 'env-secret-0123456789',
    STORE_APP_SCOPES: 'read_products',
    STORE_APP_URL: 'https://app.example.com',
    STORE_AUTH_URL: 'https://auth.example.com',
    STORE_APP_ENCRYPTION_KEYS: generateKey(),
    STORE_APP_SESSION_SECRET: 's'.repeat(32),
    STORE_APP_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
  };
}

/** The ConfigError `options` fail with on `env`; fails the test when they are accepted. */
export function configProblem(options: object, env: Record<string, string>): ConfigError {
  try {
    resolveConfig(options as never, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('resolveConfig accepted the options');
}

/** Options of a kit that starts offline: in-memory SQLite, example.com URLs, a test secret. */
export function offlineKitOptions(
  overrides: StoreAppOptionsWithoutAdapter = {},
): StoreAppOptionsWithoutAdapter {
  return {
    appUrl: 'https://app.example.com',
    oauth: {
      clientId: 'app_1',
      clientSecret: 'secret-0123456789',
      scopes: ['read_products'],
      authUrl: 'https://auth.example.com',
    },
    webhooks: { secrets: `whsec_${Buffer.alloc(32, 7).toString('base64')}` },
    ...overrides,
    storage: { databaseUrl: ':memory:', encryptionKeys: [generateKey()], ...overrides.storage },
  };
}
