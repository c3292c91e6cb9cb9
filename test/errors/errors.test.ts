import { describe, expect, it } from 'vitest';
import { ConfigError, StorageError, StoreAppError } from '../../src/errors/index.js';

describe('StoreAppError', () => {
  it('keeps a stable code, context and cause, and names the subclass', () => {
    const cause = new Error('socket hang up');
    const err = new StorageError('The database did not answer; check DATABASE_URL.', {
      cause,
      method: 'GET',
      path: '/auth/callback',
    });
    expect(err).toBeInstanceOf(StoreAppError);
    expect(err.code).toBe('STORAGE_UNAVAILABLE');
    expect(err.status).toBe(503);
    expect(err.name).toBe('StorageError');
    expect(err.cause).toBe(cause);
    expect(err.path).toBe('/auth/callback');
  });

  it('serialises without stack or cause', () => {
    const err = new ConfigError('STORE_APP_CLIENT_ID', 'is missing; copy it from the dashboard.');
    expect(err.setting).toBe('STORE_APP_CLIENT_ID');
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      code: 'CONFIG_INVALID',
      message: 'STORE_APP_CLIENT_ID: is missing; copy it from the dashboard.',
    });
  });
});
