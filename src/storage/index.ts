/**
 * `createStorage()`: the kit's storage on a StorageAdapter (./contract.ts):
 * the built-in one (SQLite, Postgres or MySQL, picked by `DATABASE_URL`) or
 * the app's own, sealed with token encryption (./sealed.ts). See ./types.ts.
 */
import type { Logger } from 'pino';
import { type EncryptionKey, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError } from '../errors/index.js';
import { sealAdapterStorage } from './adapter-storage.js';
import { type BuiltinStorageAdapter, createBuiltinAdapter } from './builtin.js';
import type { StorageAdapter } from './contract.js';
import { DEFAULT_STORAGE_TIMEOUT_MS } from './deadline.js';
import { openAdapter } from './open.js';
import { DEFAULT_PURGE_REWRITE } from './pg-rewrite.js';
import type { Storage } from './types.js';
import { DATABASE_URL_SETTING, parseDatabaseUrl } from './url.js';

export { MIGRATIONS_TABLE } from './adapter.js';
export type { BuiltinStorageAdapter } from './builtin.js';
export type * from './contract.js';
export { type ScopedTable, validateStoreScopedTables } from './repositories.js';
export { AdapterSessionStore } from './session-store.js';
export type * from './types.js';
export { DATABASE_URL_SETTING, type DatabaseTarget, parseDatabaseUrl } from './url.js';

export interface StorageOptions {
  /**
   * `file:./x.db`, a path, `:memory:` (SQLite), `postgres://…` / `postgresql://…` or
   * `mysql://…` / `mariadb://…`.
   * The parent folder of a SQLite file is created. Ignored with `adapter`.
   * @default none (the kit passes `DATABASE_URL`, itself defaulting to `./data/store-app.db`)
   */
  databaseUrl?: string;
  /**
   * The app's own StorageAdapter instead of the built-in database.
   * @default undefined (built-in, from `databaseUrl`)
   */
  adapter?: StorageAdapter;
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
  /**
   * Deadline of one storage operation, in ms: pool wait and connect,
   * each statement, lock waits, and each wait inside a transaction. Past it
   * the operation fails with StorageError (reason `timeout`; 503 with
   * Retry-After on the kit's routes). Keep it below your HTTP timeouts.
   * @default 2000
   */
  timeoutMs?: number;
  /**
   * Postgres: after purges, rewrite the tables they touched (`VACUUM (FULL)`:
   * the purged rows' bytes leave the table and index files; VACUUM alone only
   * marks their space free), at most once per `minIntervalMs` (the first purge
   * after a quiet interval at once, a burst's together after it). The rewrite
   * locks each table, readers included, while it copies it; `false` keeps
   * VACUUM only (docs/security.md says what then stays). Ignored elsewhere.
   * @default { minIntervalMs: 30000 }
   */
  purgeRewrite?: { minIntervalMs?: number } | false;
  /** SQLite settings (ignored for Postgres). */
  sqlite?: {
    /**
     * How long a statement waits for another process's write lock before the
     * operation fails with StorageError (503), in milliseconds.
     * @default storage.timeoutMs (2000)
     */
    busyTimeoutMs?: number;
  };
  /**
   * Logger for migrations and pool errors (never given a token or a query parameter).
   * @default no logging
   */
  logger?: Logger;
}

/**
 * Opens the built-in database of `databaseUrl` without encryption: the
 * StorageAdapter the kit seals (also what `store-app-kit/testing` runs).
 */
export async function openBuiltinAdapter(
  options: Pick<
    StorageOptions,
    'databaseUrl' | 'pool' | 'sqlite' | 'logger' | 'timeoutMs' | 'purgeRewrite'
  > & {
    databaseUrl: string;
  },
): Promise<BuiltinStorageAdapter> {
  const target = parseDatabaseUrl(options.databaseUrl);
  const maxPool = options.pool?.max ?? 10;
  if (!Number.isInteger(maxPool) || maxPool < 1) {
    throw new ConfigError('storage.pool.max', 'must be a whole number of at least 1');
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORAGE_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 600_000) {
    throw new ConfigError(
      'storage.timeoutMs',
      'must be a whole number of milliseconds from 100 to 600000',
    );
  }
  // The lock wait is part of the deadline unless set on its own.
  const busyTimeoutMs = options.sqlite?.busyTimeoutMs ?? timeoutMs;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 600_000) {
    throw new ConfigError(
      'storage.sqlite.busyTimeoutMs',
      'must be a whole number of milliseconds from 0 to 600000',
    );
  }
  const rewrite = options.purgeRewrite;
  const rewriteMs =
    rewrite === false ? 0 : (rewrite?.minIntervalMs ?? DEFAULT_PURGE_REWRITE.minIntervalMs);
  if (!Number.isInteger(rewriteMs) || rewriteMs < 0 || rewriteMs > 86_400_000) {
    throw new ConfigError(
      'storage.purgeRewrite.minIntervalMs',
      'must be a whole number of milliseconds from 0 to 86400000',
    );
  }
  const dialect = await openAdapter(target, {
    pool: { max: maxPool },
    purgeRewrite: options.purgeRewrite === false ? false : { minIntervalMs: rewriteMs },
    timeoutMs,
    sqliteBusyTimeoutMs: busyTimeoutMs,
    logger: options.logger,
  });
  return createBuiltinAdapter(dialect);
}

/**
 * Opens the storage (the built-in database of `databaseUrl`, or `adapter`),
 * applies migrations (unless `migrate: false`) and seals it with the keys.
 */
export async function createStorage(options: StorageOptions): Promise<Storage> {
  if (options?.adapter === undefined && typeof options?.databaseUrl !== 'string') {
    throw new ConfigError(
      DATABASE_URL_SETTING,
      'is required (a SQLite path, a postgres:// or a mysql:// URL)',
    );
  }
  // Keys are checked before the database opens: a key mistake fails at start without a connection.
  const keys =
    typeof options.encryptionKeys?.[0] === 'object'
      ? (options.encryptionKeys as readonly EncryptionKey[])
      : parseEncryptionKeys(options.encryptionKeys as readonly string[]);
  const builtin =
    options.adapter === undefined
      ? await openBuiltinAdapter({ ...options, databaseUrl: options.databaseUrl as string })
      : undefined;
  const adapter: StorageAdapter = builtin ?? (options.adapter as StorageAdapter);
  return sealAdapterStorage({
    adapter,
    builtin,
    encryptionKeys: keys,
    migrate: options.migrate,
    logger: options.logger,
  });
}
