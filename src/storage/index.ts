/**
 * `createStorage()`: the kit's database (SQLite, Postgres or MySQL, picked by
 * `DATABASE_URL`) with encrypted tokens, OAuth state, webhook dedupe, the
 * session store and the purge. See ./types.ts for the contract.
 */
import type { Logger } from 'pino';
import { createTokenCipher, type EncryptionKey, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError } from '../errors/index.js';
import { DEFAULT_SQLITE_BUSY_TIMEOUT_MS, openAdapter } from './adapter.js';
import { createPendingPurgeRepository } from './purge-outbox.js';
import {
  createClaims,
  createInstallationRepository,
  createOAuthStateRepository,
  createPurge,
  createWebhookRepository,
} from './repositories.js';
import { DrizzleSessionStore } from './sessions.js';
import type { Storage } from './types.js';
import { DATABASE_URL_SETTING, parseDatabaseUrl } from './url.js';

export { MIGRATIONS_TABLE } from './adapter.js';
export { type ScopedTable, validateStoreScopedTables } from './repositories.js';
export { DrizzleSessionStore } from './sessions.js';
export type * from './types.js';
export { DATABASE_URL_SETTING, type DatabaseTarget, parseDatabaseUrl } from './url.js';

export interface StorageOptions {
  /**
   * `file:./x.db`, a path, `:memory:` (SQLite), `postgres://…` / `postgresql://…` or
   * `mysql://…` / `mariadb://…`.
   * The parent folder of a SQLite file is created.
   * @default none (the kit passes `DATABASE_URL`, itself defaulting to `./data/store-app.db`)
   */
  databaseUrl: string;
  /**
   * Base64url 32-byte keys, newest first (`STORE_APP_ENCRYPTION_KEYS`), or
   * keys already parsed with `parseEncryptionKeys`.
   * @default none (required)
   */
  encryptionKeys: readonly string[] | readonly EncryptionKey[];
  /**
   * Apply pending migrations before returning.
   * @default true
   */
  migrate?: boolean;
  /** Postgres and MySQL pool settings (ignored for SQLite). */
  pool?: {
    /**
     * Most connections open at once.
     * @default 10
     */
    max?: number;
  };
  /** SQLite settings (ignored for Postgres). */
  sqlite?: {
    /**
     * How long a statement waits for another process's write lock before the
     * operation fails with StorageError (503), in milliseconds.
     * @default 5000
     */
    busyTimeoutMs?: number;
  };
  /**
   * Logger for migrations and pool errors (never given a token or a query parameter).
   * @default no logging
   */
  logger?: Logger;
}

/** Opens the database, applies migrations (unless `migrate: false`) and returns the storage. */
export async function createStorage(options: StorageOptions): Promise<Storage> {
  if (typeof options?.databaseUrl !== 'string') {
    throw new ConfigError(
      DATABASE_URL_SETTING,
      'is required (a SQLite path, a postgres:// or a mysql:// URL)',
    );
  }
  const target = parseDatabaseUrl(options.databaseUrl);
  const keys =
    typeof options.encryptionKeys?.[0] === 'object'
      ? (options.encryptionKeys as readonly EncryptionKey[])
      : parseEncryptionKeys(options.encryptionKeys as readonly string[]);
  const maxPool = options.pool?.max ?? 10;
  if (!Number.isInteger(maxPool) || maxPool < 1) {
    throw new ConfigError('storage.pool.max', 'must be a whole number of at least 1');
  }
  const busyTimeoutMs = options.sqlite?.busyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 600_000) {
    throw new ConfigError(
      'storage.sqlite.busyTimeoutMs',
      'must be a whole number of milliseconds from 0 to 600000',
    );
  }
  const cipher = createTokenCipher(keys);
  const adapter = await openAdapter(target, {
    pool: { max: maxPool },
    sqliteBusyTimeoutMs: busyTimeoutMs,
    logger: options.logger,
  });
  const sessionStores = new Set<DrizzleSessionStore>();

  if (options.migrate ?? true) {
    try {
      await adapter.migrate();
    } catch (err) {
      await adapter.close().catch(() => undefined);
      throw err;
    }
  }

  return {
    dialect: adapter.dialect,
    db: adapter.db,
    installations: createInstallationRepository(adapter, cipher),
    oauthStates: createOAuthStateRepository(adapter, cipher),
    webhooks: createWebhookRepository(adapter),
    pendingPurges: createPendingPurgeRepository(adapter),
    sessionStore(storeOptions) {
      const store = new DrizzleSessionStore(adapter, storeOptions, options.logger);
      sessionStores.add(store);
      return store;
    },
    transaction: (fn) => adapter.transaction(fn),
    purge: createPurge(adapter),
    claimOnce: createClaims(adapter),
    migrate: () => adapter.migrate(),
    async close() {
      for (const store of sessionStores) store.close();
      sessionStores.clear();
      await adapter.close();
    },
  };
}
