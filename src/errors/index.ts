/**
 * The one base class for every error the kit throws on purpose.
 *
 * Each module owns its codes as exported string constants and subclasses this
 * class; callers branch on `code` (stable), never on `message` (for humans).
 * Messages say what went wrong and what to do, and never contain a token,
 * code, secret, verifier or cookie value.
 *
 * @example
 * try { await kit.client(storeId).products.list(); }
 * catch (err) { if (err instanceof StoreAppError && err.code === 'RATE_LIMITED') … }
 */
export class StoreAppError<C extends string = string> extends Error {
  readonly code: C;
  /** HTTP status this error maps to when it reaches a response, if any. */
  readonly status: number | undefined;
  /** HTTP method of the request involved, if any. */
  readonly method: string | undefined;
  /** Path (never a full URL with query) of the request involved, if any. */
  readonly path: string | undefined;

  constructor(code: C, message: string, context: ErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = context.status;
    this.method = context.method;
    this.path = context.path;
  }

  /** A JSON shape safe to send to a client: no stack, no cause. */
  toJSON(): { code: C; message: string; status?: number } {
    return this.status === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, status: this.status };
  }
}

export interface ErrorContext {
  cause?: unknown;
  status?: number;
  method?: string;
  path?: string;
}

export const CONFIG_INVALID = 'CONFIG_INVALID' as const;

/** A configuration mistake found at start. The message names the setting and the fix. */
export class ConfigError extends StoreAppError<typeof CONFIG_INVALID> {
  /** The option path or environment variable at fault, e.g. `STORE_APP_ENCRYPTION_KEYS`. */
  readonly setting: string;
  constructor(setting: string, message: string, context: ErrorContext = {}) {
    super(CONFIG_INVALID, `${setting}: ${message}`, context);
    this.setting = setting;
  }
}

/**
 * Several configuration mistakes found in one pass; `problems` holds each one
 * (every message names its setting), `setting` lists them all.
 */
export class ConfigErrors extends ConfigError {
  readonly problems: readonly ConfigError[];
  constructor(problems: readonly ConfigError[]) {
    super(
      problems.map((p) => p.setting).join(', '),
      `${problems.length} configuration problems:\n${problems.map((p) => `  - ${p.message}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

export const STORAGE_UNAVAILABLE = 'STORAGE_UNAVAILABLE' as const;

/**
 * Why the database failed: `disk_full`, `read_only`, `locked` (a lock held
 * past the wait limit), `timeout` (no answer within the storage deadline),
 * `unreachable` (connection refused or lost), `database_missing` (the server
 * answers, the database in the URL does not exist), `access_denied` (user or
 * password refused), `schema` (migrations missing) or `unknown`.
 */
export type StorageFailureReason =
  | 'disk_full'
  | 'read_only'
  | 'locked'
  | 'timeout'
  | 'unreachable'
  | 'database_missing'
  | 'access_denied'
  | 'schema'
  | 'unknown';

/** Seconds a client is told to wait (`Retry-After`) after a 503 for storage. */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

/**
 * The database failed or could not be reached. Never turned into "not found":
 * callers answer 503 (with `Retry-After`) and keep their state. The message
 * names the cause and its fix; `reason` is the cause for code.
 */
export class StorageError extends StoreAppError<typeof STORAGE_UNAVAILABLE> {
  readonly reason: StorageFailureReason;
  constructor(
    message: string,
    context: ErrorContext & { reason?: StorageFailureReason | undefined } = {},
  ) {
    // (Retry-After: STORAGE_RETRY_AFTER_SECONDS on every 503 the kit answers for it.)
    const { reason, ...rest } = context;
    super(STORAGE_UNAVAILABLE, message, { status: 503, ...rest });
    this.reason = reason ?? 'unknown';
  }
}

export const DRIVER_MISSING = 'DRIVER_MISSING' as const;

const DIALECT_NAMES: Record<string, string> = {
  sqlite: 'SQLite',
  postgres: 'Postgres',
  mysql: 'MySQL/MariaDB',
};

/**
 * The database driver for the configured dialect is not installed. Drivers are
 * optional peer dependencies: an app installs the one it uses.
 */
export class DriverMissingError extends StoreAppError<typeof DRIVER_MISSING> {
  /** `sqlite`, `postgres` or `mysql`. */
  readonly dialect: string;
  /** The npm package to install, e.g. `pg`. */
  readonly packageName: string;
  constructor(dialect: string, packageName: string, setting: string, context: ErrorContext = {}) {
    super(
      DRIVER_MISSING,
      `${setting} selects ${DIALECT_NAMES[dialect] ?? dialect}, whose driver \`${packageName}\` is not installed; ` +
        `run \`npm install ${packageName}\` (or your package manager's equivalent) in the app`,
      context,
    );
    this.dialect = dialect;
    this.packageName = packageName;
  }
}

/** True when `err` (or an error it wraps) is a storage failure. */
export function isStorageFailure(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof StoreAppError && e.code === STORAGE_UNAVAILABLE) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
