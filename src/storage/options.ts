/**
 * Storage options of `storeApp()` (`options.storage`): which database, the
 * token encryption keys, migrations at start and the Postgres pool.
 */
import * as v from 'valibot';
import { ENCRYPTION_KEYS_SETTING, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError } from '../errors/index.js';
import { boolean, integer, required } from '../options/index.js';
import { missingAdapterMethods, type StorageAdapter } from './contract.js';
import {
  DATABASE_URL_SETTING,
  type DatabaseTarget,
  DEFAULT_DATABASE_URL,
  parseDatabaseUrl,
} from './url.js';

/** Environment variables backing storage options. */
export const STORAGE_ENV = {
  databaseUrl: DATABASE_URL_SETTING,
  encryptionKeys: ENCRYPTION_KEYS_SETTING,
} as const;

const KEYGEN = 'run `npx store-app keygen` to make one.';

/** The reason of a ConfigError thrown by a parser, without its setting prefix. */
function reason(err: unknown): string {
  if (!(err instanceof ConfigError)) throw err;
  return err.message.slice(err.setting.length + 2);
}

export const storageOptionsSchema = v.pipe(
  v.strictObject({
    /**
     * SQLite (`file:./x.db`, a path, `:memory:`), Postgres (`postgres://…`) or MySQL /
     * MariaDB (`mysql://…`, `mariadb://…`).
     * A malformed URL (`postgres//…`, an unknown scheme) fails the start.
     * @default process.env.DATABASE_URL, else './data/store-app.db'
     */
    databaseUrl: v.optional(
      v.pipe(
        v.string('must be a SQLite path, a postgres:// or a mysql:// URL.'),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          try {
            return { url: dataset.value, target: parseDatabaseUrl(dataset.value) };
          } catch (err) {
            addIssue({ message: reason(err) });
            return NEVER;
          }
        }),
      ),
      DEFAULT_DATABASE_URL,
    ),
    /**
     * Token encryption keys, base64url of 32 bytes each, newest first (the first
     * encrypts, all decrypt). Make one with `npx store-app keygen`.
     * @default process.env.STORE_APP_ENCRYPTION_KEYS (comma-separated; required)
     */
    encryptionKeys: required(
      v.pipe(
        v.union(
          [v.string(), v.custom<readonly string[]>(Array.isArray)],
          `must be a comma-separated string or an array of keys; ${KEYGEN}`,
        ),
        v.rawTransform(({ dataset, addIssue, NEVER }) => {
          if (typeof dataset.value !== 'string') {
            const i = dataset.value.findIndex((k) => typeof k !== 'string');
            if (i >= 0) {
              addIssue({ message: `key #${i + 1} is not a string; ${KEYGEN}` });
              return NEVER;
            }
          }
          try {
            parseEncryptionKeys(dataset.value);
          } catch (err) {
            addIssue({ message: reason(err) });
            return NEVER;
          }
          const raw = dataset.value;
          const list = typeof raw === 'string' ? raw.split(',') : raw;
          return list.map((k) => k.trim()).filter((k) => k !== '');
        }),
      ),
      `set it to one or more comma-separated base64url 32-byte keys (newest first): ${KEYGEN}`,
      { placeholderFix: KEYGEN },
    ),
    /**
     * Your own StorageAdapter (`store-app-kit/storage`) instead of the built-in
     * SQLite/Postgres storage; `databaseUrl` and `DATABASE_URL` are then not
     * used, `kit.db` is undefined and `storeScopedTables` must be empty (delete
     * your rows in `onPurge`). Checked at start: every missing method is named.
     * @default undefined (built-in storage)
     */
    adapter: v.optional(
      v.pipe(
        v.custom<StorageAdapter>(
          (value) => typeof value === 'object' && value !== null,
          'must be a StorageAdapter object (see docs/storage.md, "Writing an adapter").',
        ),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          // All of them at once: an adapter author fixes the list in one go.
          const missing = missingAdapterMethods(dataset.value);
          if (missing.length > 0) {
            addIssue({
              message: `lacks ${missing.map((m) => `${m}()`).join(', ')}; a StorageAdapter implements every method of the store-app-kit/storage interface (docs/storage.md, "Writing an adapter").`,
            });
          }
        }),
      ),
    ),
    /**
     * Apply pending migrations when `storeApp()` starts. Turn off to run
     * `npx store-app migrate` yourself (e.g. in a release step).
     * @default true
     */
    migrate: v.optional(boolean(), true),
    /**
     * Deadline of one storage operation, in milliseconds: pool wait and
     * connect, each statement, lock waits (Postgres `lock_timeout`, InnoDB
     * `innodb_lock_wait_timeout`, SQLite `busy_timeout`) and each wait inside
     * a transaction. Past it the request answers 503 `STORAGE_UNAVAILABLE`
     * with `Retry-After`; background work backs off.
     * @default 2000
     */
    timeoutMs: v.optional(integer(100, 600_000), 2000),
    /**
     * Postgres: after purges, rewrite the tables they touched (`VACUUM (FULL)`),
     * so the purged rows' bytes leave the table and index files (VACUUM alone
     * only marks their space free). At most one rewrite per `minIntervalMs`: the
     * first purge after a quiet interval is rewritten at once, the purges of a
     * burst together after it. A rewrite locks its table, readers included,
     * while it copies it (about 2 s for 100,000 installations here; minutes for tables of
     * many GB: there, set `false` and rewrite off-peak, e.g. with pg_repack). `false`:
     * VACUUM only; docs/security.md says what then stays. Ignored by SQLite
     * (zeroed on delete) and MySQL (OPTIMIZE TABLE after each purge).
     * @default { minIntervalMs: 600000 }
     */
    purgeRewrite: v.optional(
      v.union(
        [
          v.literal(false),
          v.strictObject({
            /**
             * The least time between two rewrites, in ms; 0 rewrites after every purge.
             * @default 600000 (10 minutes: the purged bytes' longest stay, and at most six
             * table locks an hour per instance)
             */
            minIntervalMs: v.optional(integer(0, 86_400_000), 600_000),
          }),
        ],
        'must be false or { minIntervalMs }.',
      ),
      { minIntervalMs: 600_000 },
    ),
    /**
     * Postgres / MySQL pool settings (ignored for SQLite): `max`, the most connections
     * open at once (default 10).
     */
    pool: v.optional(
      v.strictObject({
        /**
         * Most connections open at once.
         * @default 10
         */
        max: v.optional(integer(1), 10),
      }),
      {},
    ),
  }),
  v.transform(
    (o): ResolvedStorageOptions => ({
      databaseUrl: o.databaseUrl.url,
      target: o.databaseUrl.target,
      encryptionKeys: o.encryptionKeys,
      migrate: o.migrate,
      poolMax: o.pool.max,
      timeoutMs: o.timeoutMs,
      purgeRewrite: o.purgeRewrite,
      adapter: o.adapter,
    }),
  ),
);

/** `storeApp({ storage })`. */
export type StoreAppStorageOptions = v.InferInput<typeof storageOptionsSchema>;

export interface ResolvedStorageOptions {
  databaseUrl: string;
  target: DatabaseTarget;
  /** Validated keys, newest first. */
  encryptionKeys: string[];
  migrate: boolean;
  poolMax: number;
  /** Deadline of one storage operation, in ms. */
  timeoutMs: number;
  /** Postgres: the rewrite of purged tables, or false for VACUUM only. */
  purgeRewrite: { minIntervalMs: number } | false;
  /** The app's own adapter; undefined for the built-in storage. */
  adapter: StorageAdapter | undefined;
}

/**
 * `storage.adapter` and `storage.databaseUrl` are two ways to say where data
 * lives: given both, the start fails instead of silently ignoring one.
 */
export function checkStorageMode(storage: unknown): ConfigError | undefined {
  if (typeof storage !== 'object' || storage === null) return undefined;
  const { adapter, databaseUrl } = storage as { adapter?: unknown; databaseUrl?: unknown };
  if (adapter === undefined || databaseUrl === undefined) return undefined;
  return new ConfigError(
    'storage.adapter',
    'is given together with storage.databaseUrl; give one of them (the adapter decides where data lives)',
  );
}
