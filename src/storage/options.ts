/**
 * Storage options of `storeApp()` (`options.storage`): which database, the
 * token encryption keys, migrations at start and the Postgres pool.
 */
import * as v from 'valibot';
import { ENCRYPTION_KEYS_SETTING, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError } from '../errors/index.js';
import { boolean, integer, required } from '../options/index.js';
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
     * Apply pending migrations when `storeApp()` starts. Turn off to run
     * `npx store-app migrate` yourself (e.g. in a release step).
     * @default true
     */
    migrate: v.optional(boolean(), true),
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
}
