/**
 * The small seam between the repositories and the drivers. The
 * repositories are written once against the SQLite-typed Drizzle API (the
 * Postgres builders have the same shape for everything they use: select,
 * insert … onConflict … returning, update, delete); this file owns what truly
 * differs: opening, serialising, transactions, rows-affected and migrations.
 * MySQL/MariaDB (./mysql.ts) lacks RETURNING and ON CONFLICT: the repositories
 * call its few statement hooks where they would use them.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type pg from 'pg';
import type { Logger } from 'pino';
import { ConfigError, DriverMissingError, StorageError, StoreAppError } from '../errors/index.js';
import {
  DEFAULT_STORAGE_TIMEOUT_MS,
  deadlineError,
  watchedTransaction,
  withDeadline,
} from './deadline.js';
import { classifyStorageFailure, driverCode, storageFailureMessage } from './error-causes.js';
import { createGroupCommit } from './group-commit.js';
import { guardTransactionConnections } from './pg-connection-guard.js';
import { createPgRewriter, DEFAULT_PURGE_REWRITE, type PgRewriteOptions } from './pg-rewrite.js';
import { createScopedContext, type ScopedContext } from './scoped-context.js';
import {
  loadRuntimeSqliteDriver,
  nonNodeRuntime,
  type SqliteConnection,
  type SqliteDriver,
} from './sqlite-drivers.js';
import { boundWal, createFullDiskRelief } from './sqlite-wal.js';
import type { AnyDrizzle, Dialect } from './types.js';
import { DATABASE_URL_SETTING } from './url.js';

/** The Drizzle type the shared code is checked against (Postgres has the same surface). */
export type Db = BetterSQLite3Database;
export type KitTables = typeof import('./schema/sqlite.js');

export const MIGRATIONS_TABLE = '__store_app_migrations';
// src/storage and dist/storage are both two levels below the package root.
export const MIGRATIONS_ROOT = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'migrations',
);

export interface TransactionOptions {
  /**
   * Run `fn` again (a bounded number of times) when the database picked this
   * transaction as a deadlock victim or a lock wait timed out (MySQL). Only
   * for the kit's own transactions, whose work is safe to repeat after a full
   * rollback; the app's `storage.transaction` is never re-run behind its back.
   */
  retryOnLockConflict?: boolean;
  /**
   * Let this transaction share its COMMIT (one fsync) with the others asked
   * for in the same turn of the event loop, each in its own savepoint; it
   * settles only after that COMMIT. SQLite only (one connection, where each
   * COMMIT is an fsync); the server dialects ignore it. For the kit's short
   * transactions whose caller waits for the durable result (webhook
   * deliveries), never for the app's `storage.transaction`.
   */
  group?: boolean;
}

export interface DialectAdapter {
  readonly dialect: Dialect;
  /** The base Drizzle handle (outside any transaction). */
  readonly db: AnyDrizzle;
  readonly tables: KitTables;
  /**
   * Runs one storage operation: inside the caller's transaction when there is
   * one, otherwise (SQLite) behind the in-process mutex. DB failures become
   * StorageError naming `what`.
   */
  run<T>(what: string, fn: (db: Db) => Promise<T>): Promise<T>;
  transaction<T>(fn: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Rows changed by an UPDATE/DELETE result of this driver. */
  affected(result: unknown): number;
  /**
   * After a committed purge: make the deleted rows of `tables` unreadable on
   * disk. SQLite (secure_delete is on for every connection) checkpoints the
   * WAL and truncates it; Postgres rewrites them (VACUUM FULL, batched:
   * ./pg-rewrite.ts; VACUUM while a rewrite is owed); MySQL rebuilds them
   * (OPTIMIZE TABLE). Never throws: returns
   * false (and logs) when the step could not finish.
   */
  scrub(tables: readonly string[]): Promise<boolean>;
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export interface AdapterOptions {
  pool?: { max?: number };
  /**
   * Deadline of one storage operation on the request path (pool wait,
   * connect, statement, lock wait; each wait inside a transaction), in ms.
   * @default DEFAULT_STORAGE_TIMEOUT_MS (2000)
   */
  timeoutMs?: number;
  /**
   * Postgres: rewrite the tables purges touched (`VACUUM (FULL)`), at most
   * once per `minIntervalMs`, so purged rows leave the table and index files;
   * `false`: VACUUM only (./pg-rewrite.ts).
   * @default DEFAULT_PURGE_REWRITE
   */
  purgeRewrite?: PgRewriteOptions | false;
  /** SQLite busy_timeout in ms (validated by createStorage). */
  sqliteBusyTimeoutMs?: number;
  logger?: Logger | undefined;
}

/** Turns a driver failure into a StorageError; leaves the kit's own errors alone. */
export function storageError(what: string, err: unknown): StoreAppError {
  if (err instanceof StoreAppError) return err;
  // Drizzle's query error message lists the SQL parameters (ciphertexts, hashes):
  // keep only the driver error underneath, and name its code, not its text.
  // (DrizzleQueryError sets no `name`: recognise it by its fields.)
  const driver =
    err instanceof Error && 'params' in err && 'query' in err && err.cause !== undefined
      ? err.cause
      : err;
  const reason = classifyStorageFailure(driver);
  return new StorageError(storageFailureMessage(what, reason, driverCode(driver), driver), {
    cause: driver,
    reason,
  });
}

/** Postgres SQLSTATE classes/codes that mean the connection or server failed, not the statement. */
const PG_CONNECTION_CODE = /^(08...|57P0[1-5]|53...|25P03)$/;
/** Socket-level failures (Node errno codes) under either driver. */
const NET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** SQLite result codes (primary, extended ones start with these) that mean the database, not the statement, failed. */
const SQLITE_UNAVAILABLE =
  /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM|CORRUPT|NOTADB)(_|$)/;
/**
 * mysql2 codes that mean the server or connection failed, or a lock conflict
 * outlasted the retries (the caller may try again later), not the statement.
 */
const MYSQL_UNAVAILABLE = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
  'ER_NORMAL_SHUTDOWN',
  'ER_SHUTDOWN_COMPLETE',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'ER_OPTION_PREVENTS_STATEMENT',
  'ER_CANT_LOCK',
  'ER_DISK_FULL',
  'ER_RECORD_FILE_FULL',
  'ER_OUT_OF_RESOURCES',
  'ER_OUTOFMEMORY',
  'ER_HOST_IS_BLOCKED',
]);
/** mysql2 reports a closed pool or connection with plain errors that carry no code. */
const MYSQL_CLOSED = /^(Pool is closed|Can't add new command when connection is in closed state)/;
/** node-postgres reports a lost connection with plain errors that carry no code. */
const PG_LOST_CONNECTION =
  /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect)/;

/**
 * True when a driver error means "the database is unavailable" (connection
 * lost, server shutting down, lock held past busy_timeout, disk full) rather
 * than "this statement is wrong" (constraint violations, syntax): the first
 * kind is a 503 whoever issued the statement; the second is the app's business.
 */
export function isUnavailableError(err: unknown): boolean {
  if (err instanceof StoreAppError || !(err instanceof Error)) return false;
  const driver = 'params' in err && 'query' in err && err.cause instanceof Error ? err.cause : err;
  const code = (driver as { code?: unknown }).code;
  if (typeof code === 'string') {
    return (
      PG_CONNECTION_CODE.test(code) ||
      NET_CODES.has(code) ||
      SQLITE_UNAVAILABLE.test(code) ||
      MYSQL_UNAVAILABLE.has(code)
    );
  }
  return PG_LOST_CONNECTION.test(driver.message) || MYSQL_CLOSED.test(driver.message);
}

function createMutex() {
  let tail: Promise<unknown> = Promise.resolve();
  return function withLock<T>(fn: () => Promise<T>): Promise<T> {
    const result = tail.then(fn);
    tail = result.catch(() => undefined);
    return result;
  };
}

/**
 * One mutex per SQLite file per process. Two Storage instances on one file in
 * one process (tests, a CLI inside an app) must not both hold transactions:
 * better-sqlite3 waits for the write lock synchronously, so the second BEGIN
 * would block the very event loop the first transaction needs to finish.
 */
const fileLocks = new Map<string, { withLock: ReturnType<typeof createMutex>; users: number }>();

function acquireFileLock(filename: string) {
  if (filename === ':memory:') return { withLock: createMutex(), release() {} };
  let entry = fileLocks.get(filename);
  if (!entry) {
    entry = { withLock: createMutex(), users: 0 };
    fileLocks.set(filename, entry);
  }
  entry.users++;
  const held = entry;
  let released = false;
  return {
    withLock: held.withLock,
    release() {
      if (released) return;
      released = true;
      if (--held.users === 0 && fileLocks.get(filename) === held) fileLocks.delete(filename);
    },
  };
}

/**
 * The transaction an async call chain runs in. Work started inside a
 * transaction and still running after it ended (a callback not awaited)
 * keeps its async context: `open` turns false at the end so such work falls
 * back to the enclosing transaction, or to the base handle behind the lock,
 * instead of writing into whatever transaction runs on that connection next.
 */
export interface TxContext<T> {
  tx: T;
  open: boolean;
  parent: TxContext<T> | undefined;
}

export function activeTx<T>(store: ScopedContext<TxContext<T>>): TxContext<T> | undefined {
  let ctx = store.getStore();
  while (ctx && !ctx.open) ctx = ctx.parent;
  return ctx;
}

/** Runs `fn` in a new transaction context, closing it as soon as `fn` settles. */
export async function inTxContext<T, R>(
  store: ScopedContext<TxContext<T>>,
  tx: T,
  parent: TxContext<T> | undefined,
  fn: () => Promise<R>,
): Promise<R> {
  const ctx: TxContext<T> = { tx, open: true, parent };
  try {
    return await store.run(ctx, fn);
  } finally {
    ctx.open = false;
  }
}

/** Conflicts a server dialect rolls a whole transaction back for (MySQL deadlocks, lock waits). */
export interface TransactionConflicts {
  /** The database rolled the whole transaction back (always a StorageError when not retried). */
  conflict(err: unknown): boolean;
  /** Runs of an outermost transaction in all, 1 for none again. */
  attempts: number;
  backoff(attempt: number, err: unknown): Promise<void>;
}

/**
 * A transaction through Drizzle's driver API (Postgres, MySQL), joining an
 * outer one as a savepoint. What `fn` throws passes through unchanged
 * (constraint violations are the app's business) unless the connection or
 * server failed; BEGIN/COMMIT failures are ours (StorageError). With
 * `conflicts`, an outermost transaction the database rolled back on a
 * conflict runs again, up to `attempts` runs in all.
 */
export async function driverTransaction<T>(
  current: ScopedContext<TxContext<Db>>,
  db: unknown,
  fn: (tx: Db) => Promise<T>,
  conflicts?: TransactionConflicts,
): Promise<T> {
  const outer = activeTx(current);
  // biome-ignore lint/suspicious/noExplicitAny: the driver's handle (db or an outer tx for a savepoint).
  const base: any = outer ? outer.tx : db;
  // Only an outermost transaction can run again: a conflict rolls back the whole transaction.
  const attempts = conflicts && !outer ? conflicts.attempts : 1;
  for (let attempt = 1; ; attempt++) {
    let settled = false;
    try {
      // biome-ignore lint/suspicious/noExplicitAny: Drizzle's transaction of the runtime schema.
      return await base.transaction(async (tx: any) => {
        try {
          return await inTxContext(current, tx as Db, outer, () => fn(tx as Db));
        } finally {
          settled = true;
        }
      });
    } catch (err) {
      const conflict = conflicts?.conflict(err) ?? false;
      if (conflict && attempt < attempts) {
        await conflicts?.backoff(attempt, err);
        continue;
      }
      if (settled && !isUnavailableError(err) && !conflict) throw err;
      throw storageError('transaction', err);
    }
  }
}

/** The npm package each dialect's driver comes from (optional peer dependencies). */
export const DRIVER_PACKAGES = {
  sqlite: 'better-sqlite3',
  postgres: 'pg',
  mysql: 'mysql2',
} as const;

/**
 * Imports a driver module, turning "the driver package is not installed" into
 * a DriverMissingError naming the package. Other failures (a native module
 * built for another Node version, a broken install) keep their own message.
 */
export async function importDriver<T>(dialect: Dialect, load: () => Promise<T>): Promise<T> {
  const pkg = DRIVER_PACKAGES[dialect];
  try {
    return await load();
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    const missing =
      (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') &&
      typeof e.message === 'string' &&
      (e.message.includes(`'${pkg}'`) || e.message.includes(`"${pkg}"`));
    if (missing) throw new DriverMissingError(dialect, pkg, DATABASE_URL_SETTING, { cause: err });
    throw err;
  }
}

/**
 * The SQLite driver of this runtime (better-sqlite3 on Node, bun:sqlite on
 * Bun, node:sqlite on Deno: ./sqlite-drivers.ts) and the kit's SQLite schema,
 * loaded only when the app uses SQLite.
 */
async function loadSqliteDriver() {
  const [driver, schema] = await Promise.all([
    loadRuntimeSqliteDriver(loadBetterSqlite3),
    // Each dialect's schema with its driver: a SQLite app never loads drizzle's pg-core.
    import('./schema/sqlite.js'),
  ]);
  return { driver, schema };
}

/** better-sqlite3 (Node). */
async function loadBetterSqlite3(): Promise<SqliteDriver> {
  return importDriver('sqlite', async () => {
    const [native, orm, migrator] = await Promise.all([
      import('better-sqlite3'),
      import('drizzle-orm/better-sqlite3'),
      import('drizzle-orm/better-sqlite3/migrator'),
    ]);
    return {
      name: 'better-sqlite3',
      // Its Database has the connection's shape already (pragma returns the rows).
      open: (filename) => new native.default(filename) as unknown as SqliteConnection,
      drizzle: (connection) => orm.drizzle(connection as unknown as Database.Database),
      migrate: (db, config) => migrator.migrate(db, config),
    };
  });
}

/** pg and its Drizzle glue, loaded only when the app uses Postgres. */
async function loadPostgresDriver() {
  return importDriver('postgres', async () => {
    const [driver, orm, migrator, schema] = await Promise.all([
      import('pg'),
      import('drizzle-orm/node-postgres'),
      import('drizzle-orm/node-postgres/migrator'),
      import('./schema/postgres.js'),
    ]);
    return { pg: driver.default, drizzle: orm.drizzle, migrate: migrator.migrate, schema };
  });
}

/** A SQLite database (its driver loaded on demand). */
export async function openSqliteAdapter(
  filename: string,
  options: AdapterOptions,
): Promise<DialectAdapter> {
  return openSqlite(await loadSqliteDriver(), filename, options);
}

/** A Postgres database (its driver loaded on demand). */
export async function openPostgresAdapter(
  url: string,
  options: AdapterOptions,
): Promise<DialectAdapter> {
  return openPostgres(await loadPostgresDriver(), url, options);
}

type LoadedSqlite = Awaited<ReturnType<typeof loadSqliteDriver>>;
type PostgresDriver = Awaited<ReturnType<typeof loadPostgresDriver>>;

/**
 * How long a SQLite statement waits for another process's write lock before
 * SQLITE_BUSY: the storage deadline, so a held lock answers 503 in time.
 */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = DEFAULT_STORAGE_TIMEOUT_MS;

/** VACUUM / OPTIMIZE after a purge: maintenance, not bounded by the request deadline. */
export const MAINTENANCE_TIMEOUT_MS = 10 * 60_000;

function openSqliteFile(
  driver: SqliteDriver,
  filename: string,
  busyTimeoutMs: number,
): SqliteConnection {
  let sqlite: SqliteConnection | undefined;
  try {
    if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
    sqlite = driver.open(filename);
    // busy_timeout first: switching to WAL needs the lock another process may hold.
    sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`);
    sqlite.pragma('journal_mode = WAL');
    // The WAL bounded by the room its volume has (./sqlite-wal.ts).
    boundWal(sqlite, filename);
    // Set, not assumed: better-sqlite3 is built with WAL defaulting to NORMAL,
    // which may lose the last commits on a power cut. A rotated refresh token or
    // a webhook's dedupe row that vanished would cost a reinstall or a replay.
    sqlite.pragma('synchronous = FULL');
    sqlite.pragma('foreign_keys = ON');
    // Deleted rows are overwritten with zeros instead of lingering in free
    // pages: a purged merchant's data must leave no readable bytes.
    sqlite.pragma('secure_delete = ON');
  } catch (cause) {
    if (sqlite?.open) sqlite.close();
    const code = (cause as { code?: unknown }).code;
    // Deno refuses the file without --allow-read/--allow-write (NotCapable):
    // name the flags, not the path, which is fine.
    const denied =
      nonNodeRuntime() === 'Deno' &&
      /^(NotCapable|PermissionDenied)$/.test(String((cause as Error)?.name));
    throw new ConfigError(
      DATABASE_URL_SETTING,
      denied
        ? 'names a SQLite file Deno may not open: run with --allow-read and --allow-write for its folder (e.g. --allow-write=./data), see docs/runtimes.md'
        : `cannot open the SQLite database file${typeof code === 'string' ? ` (${code})` : ''}; ` +
            'check that the path names a SQLite file (or none yet) in a folder that exists or can be created, and that both are writable',
      { cause },
    );
  }
  return sqlite;
}

function openSqlite(
  { driver, schema }: LoadedSqlite,
  filename: string,
  options: AdapterOptions,
): DialectAdapter {
  const sqlite = openSqliteFile(
    driver,
    filename,
    options.sqliteBusyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS,
  );
  const db = driver.drizzle(sqlite);
  const lock = acquireFileLock(filename);
  const { withLock } = lock;
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORAGE_TIMEOUT_MS;
  const relieve = createFullDiskRelief(sqlite, filename, options.logger);
  /**
   * The in-process lock, bounded: statements block the event loop while
   * SQLite waits for another process's lock (busy_timeout), so callers queue
   * here; one that waited past the deadline fails without running instead of
   * adding its own wait to the pile.
   */
  function withLockBy<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const queued = performance.now();
    return withLock(() => {
      if (timeoutMs > 0 && performance.now() - queued > timeoutMs) {
        throw deadlineError(what, timeoutMs);
      }
      relieve.beforeWork();
      return fn();
    });
  }
  const current = createScopedContext<TxContext<Db>>();
  let savepoints = 0;

  async function run<T>(what: string, fn: (db: Db) => Promise<T>): Promise<T> {
    const inTx = activeTx(current);
    const call = async () => {
      try {
        return await fn(inTx?.tx ?? db);
      } catch (err) {
        throw relieve.failed(storageError(what, err));
      }
    };
    return inTx ? call() : withLockBy(what, call);
  }

  function exec(statement: string) {
    try {
      sqlite.exec(statement);
    } catch (err) {
      throw storageError('transaction control', err);
    }
  }

  // Rolling back must never hide the error that caused it.
  function undo(...statements: string[]) {
    try {
      if (sqlite.open && sqlite.inTransaction) for (const s of statements) sqlite.exec(s);
    } catch (err) {
      options.logger?.warn(
        { errorCode: (err as { code?: unknown }).code },
        'SQLite rollback failed',
      );
    }
  }

  // Deliveries that arrive together share one COMMIT (see ./group-commit.ts).
  const group = createGroupCommit({
    withLock,
    begin: () => {
      relieve.beforeWork();
      exec('BEGIN IMMEDIATE');
    },
    commit: () => exec('COMMIT'),
    rollback: () => undo('ROLLBACK'),
    savepoint: (name) => exec(`SAVEPOINT ${name}`),
    release: (name) => exec(`RELEASE ${name}`),
    rollbackTo(name) {
      try {
        sqlite.exec(`ROLLBACK TO ${name}`);
        sqlite.exec(`RELEASE ${name}`);
        return true;
      } catch (err) {
        options.logger?.warn(
          { errorCode: (err as { code?: unknown }).code },
          'SQLite rollback to a savepoint failed',
        );
        return false;
      }
    },
    inTransaction: () => sqlite.open && sqlite.inTransaction,
    run: (body) => inTxContext(current, db, undefined, body),
    memberError: (err) =>
      relieve.failed(isUnavailableError(err) ? storageError('transaction', err) : err),
    groupError: (err) => relieve.failed(storageError('transaction', err)),
    // A deferred foreign key (the app's schema may declare one) fails the COMMIT.
    memberMayHaveFailedCommit(err) {
      const code =
        err instanceof Error ? (err.cause as { code?: unknown } | undefined)?.code : null;
      return typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT');
    },
  });

  async function transaction<T>(
    fn: (tx: Db) => Promise<T>,
    txOptions?: TransactionOptions,
  ): Promise<T> {
    const outer = activeTx(current);
    if (!outer && txOptions?.group) return group.run(() => fn(db));
    if (outer) {
      // Nested: a savepoint, so an inner failure the caller catches undoes only its own work.
      const name = `sp_${++savepoints}`;
      exec(`SAVEPOINT ${name}`);
      try {
        const result = await inTxContext(current, db, outer, () => fn(db));
        exec(`RELEASE ${name}`);
        return result;
      } catch (err) {
        undo(`ROLLBACK TO ${name}`, `RELEASE ${name}`);
        throw isUnavailableError(err) ? storageError('transaction', err) : err;
      }
    }
    return withLockBy('transaction', async () => {
      // IMMEDIATE takes the write lock now, so two processes serialise here
      // (busy_timeout) instead of failing at their first write.
      exec('BEGIN IMMEDIATE');
      try {
        const result = await inTxContext(current, db, undefined, () => fn(db));
        exec('COMMIT');
        return result;
      } catch (err) {
        undo('ROLLBACK');
        // The app's own errors pass through; a database that became unavailable is a StorageError.
        throw relieve.failed(isUnavailableError(err) ? storageError('transaction', err) : err);
      }
    });
  }

  return {
    dialect: 'sqlite',
    db,
    tables: schema,
    run,
    transaction,
    affected: (result) => Number((result as { changes?: number }).changes ?? 0),
    scrub: async () => {
      // Inside the app's own transaction the checkpoint cannot run (and the
      // lock is held by that transaction): the next purge or checkpoint does it.
      if (activeTx(current)) return false;
      return withLock(async () => {
        if (filename === ':memory:' || !sqlite.open) return true;
        try {
          // The WAL still holds the page images written before the delete;
          // TRUNCATE copies the zeroed pages back and empties the WAL file.
          // busy = 1 means a reader in another process kept it from finishing.
          const [r] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
          if (r?.busy === 0) return true;
          options.logger?.warn(
            { event: 'purge.scrub_incomplete' },
            'WAL checkpoint after a purge was blocked by a reader; the next purge or checkpoint completes it',
          );
          return false;
        } catch (err) {
          options.logger?.warn(
            { event: 'purge.scrub_failed', errorCode: (err as { code?: unknown }).code },
            'WAL checkpoint after a purge failed',
          );
          return false;
        }
      });
    },
    async migrate() {
      await withLock(async () => {
        try {
          driver.migrate(db, {
            migrationsFolder: join(MIGRATIONS_ROOT, 'sqlite'),
            migrationsTable: MIGRATIONS_TABLE,
          });
        } catch (err) {
          throw storageError('applying SQLite migrations', err);
        }
      });
      options.logger?.debug({ dialect: 'sqlite' }, 'store-app-kit migrations applied');
    },
    async close() {
      // Deliveries waiting for their group's turn commit first, not fail.
      await group.flush();
      await withLock(async () => {
        if (sqlite.open) sqlite.close();
      });
      lock.release();
    },
  };
}

function openPostgres(
  driver: PostgresDriver,
  url: string,
  options: AdapterOptions,
): DialectAdapter {
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORAGE_TIMEOUT_MS;
  const pool = new driver.pg.Pool({
    connectionString: url,
    max: options.pool?.max ?? 10,
    // Pool wait and connect (a server that accepts TCP but never answers).
    connectionTimeoutMillis: timeoutMs,
    // Client side, so a silent network is bounded too: the pool then drops the client.
    query_timeout: timeoutMs,
    // Server side: a row or table lock held by another transaction.
    lock_timeout: timeoutMs,
    keepAlive: true,
  });
  // A connection the server drops (restart, failover, idle-in-transaction
  // timeout) must not crash the process. The pool only listens on idle
  // clients; a checked-out client (a transaction between two statements) would
  // emit an unhandled 'error'. The statement in flight still rejects, becomes a
  // StorageError, and the pool discards the dead client.
  const onClientError = (err: Error): void => {
    options.logger?.warn(
      { errorCode: (err as { code?: unknown }).code },
      'postgres connection lost',
    );
  };
  pool.on('error', onClientError);
  pool.on('connect', (client) => {
    client.on('error', onClientError);
  });
  const db = driver.drizzle(pool);
  const current = createScopedContext<TxContext<Db>>();

  async function run<T>(what: string, fn: (db: Db) => Promise<T>): Promise<T> {
    try {
      return await withDeadline(what, timeoutMs, () =>
        fn((activeTx(current)?.tx ?? db) as unknown as Db),
      );
    } catch (err) {
      throw storageError(what, err);
    }
  }

  const guarded = guardTransactionConnections(pool);
  const rewriter =
    options.purgeRewrite === false
      ? undefined
      : createPgRewriter(pool, options.purgeRewrite ?? DEFAULT_PURGE_REWRITE, options.logger);
  const transaction = <T>(fn: (tx: Db) => Promise<T>): Promise<T> =>
    activeTx(current)
      ? driverTransaction(current, db, fn)
      : watchedTransaction(timeoutMs, () => guarded(() => driverTransaction(current, db, fn)));

  return {
    dialect: 'postgres',
    db,
    tables: driver.schema as unknown as KitTables,
    run,
    transaction,
    affected: (result) => Number((result as { rowCount?: number | null }).rowCount ?? 0),
    async scrub(tables) {
      if (tables.length === 0) return true;
      if (activeTx(current)) return false;
      // Dead tuples keep the purged rows readable until VACUUM; VACUUM cannot
      // run in a transaction, so this runs after the purge commits. VACUUM
      // frees their space but leaves their bytes in the files: the rewrite
      // (./pg-rewrite.ts) removes those.
      const list = tables.map((name) => `"${name.replaceAll('"', '""')}"`).join(', ');
      const vacuum = async () => {
        try {
          // Maintenance, not the request path: VACUUM may take longer than the deadline.
          await pool.query({
            text: `VACUUM ${list}`,
            query_timeout: MAINTENANCE_TIMEOUT_MS,
          } as unknown as pg.QueryConfig);
          return true;
        } catch (err) {
          options.logger?.warn(
            { event: 'purge.scrub_failed', errorCode: (err as { code?: unknown }).code },
            'VACUUM after a purge failed; autovacuum will reclaim the rows later',
          );
          return false;
        }
      };
      return rewriter ? rewriter.afterPurge(tables, vacuum) : vacuum();
    },
    async migrate() {
      // Its own connection without the request-path deadlines: a migration
      // (or waiting for another instance's) may take longer.
      const client: pg.Client = new driver.pg.Client({
        connectionString: url,
        connectionTimeoutMillis: Math.max(timeoutMs, 5000),
      });
      client.on('error', onClientError);
      try {
        await client.connect();
      } catch (err) {
        await client.end().catch(() => undefined);
        throw storageError('connecting to Postgres', err);
      }
      try {
        // One migrator at a time across processes starting together.
        await client.query('SELECT pg_advisory_lock(hashtext($1))', [MIGRATIONS_TABLE]);
        try {
          await driver.migrate(driver.drizzle(client), {
            migrationsFolder: join(MIGRATIONS_ROOT, 'postgres'),
            migrationsTable: MIGRATIONS_TABLE,
            migrationsSchema: 'public',
          });
        } finally {
          await client.query('SELECT pg_advisory_unlock(hashtext($1))', [MIGRATIONS_TABLE]);
        }
      } catch (err) {
        throw storageError('applying Postgres migrations', err);
      } finally {
        await client.end().catch(() => undefined);
      }
      options.logger?.debug({ dialect: 'postgres' }, 'store-app-kit migrations applied');
    },
    async close() {
      rewriter?.close();
      await pool.end();
    },
  };
}
