/**
 * The kit's storage over a StorageAdapter it did not open (the app's own, D1's):
 * migrations (unless `migrate: false`), then sealed with token encryption. No
 * built-in driver and no Node module, so a Worker's composition uses this and
 * `createStorage` (./index.ts) only adds the opening of the built-in database.
 */
import type { Logger } from 'pino';
import { createTokenCipher, type EncryptionKey, parseEncryptionKeys } from '../crypto/index.js';
import type { BuiltinStorageAdapter } from './builtin.js';
import type { StorageAdapter } from './contract.js';
import { sealStorage } from './sealed.js';
import type { Storage } from './types.js';

/** What `sealAdapterStorage` takes: an opened adapter and the keys. */
export interface AdapterStorageOptions {
  adapter: StorageAdapter;
  /** The built-in adapter, when `adapter` is it (its Drizzle handle and transactions). */
  builtin?: BuiltinStorageAdapter;
  encryptionKeys: readonly string[] | readonly EncryptionKey[];
  /** @default true */
  migrate?: boolean;
  logger?: Logger;
}

/** Applies migrations (unless `migrate: false`) and seals `adapter` with the keys. */
export async function sealAdapterStorage(options: AdapterStorageOptions): Promise<Storage> {
  const keys =
    typeof options.encryptionKeys?.[0] === 'object'
      ? (options.encryptionKeys as readonly EncryptionKey[])
      : parseEncryptionKeys(options.encryptionKeys as readonly string[]);
  const cipher = createTokenCipher(keys);
  const { adapter, builtin } = options;
  if (options.migrate ?? true) {
    try {
      await adapter.migrate();
    } catch (err) {
      await adapter.close().catch(() => undefined);
      throw err;
    }
  }
  return sealStorage(adapter, { cipher, logger: options.logger, builtin });
}
