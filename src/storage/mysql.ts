/**
 * MySQL / MariaDB through mysql2 and Drizzle's mysql2 driver: opening,
 * transactions with deadlock retries, the migration lock, the scrub after a
 * purge, and the few statements MySQL spells differently (it has neither
 * RETURNING nor ON CONFLICT). Loaded only when `DATABASE_URL` is `mysql://` or
 * `mariadb://`, so other apps never import it or its driver.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MySql2Database } from 'drizzle-orm/mysql2';
import type { Pool, PoolConnection } from 'mysql2';
import {
  type AdapterOptions,
  activeTx,
  type Db,
  type DialectAdapter,
  driverTransaction,
  importDriver,
  type KitTables,
  MIGRATIONS_ROOT,
  MIGRATIONS_TABLE,
  storageError,
  type TransactionOptions,
  type TxContext,
} from './adapter.js';
import { DEFAULT_STORAGE_TIMEOUT_MS, watchedTransaction, withDeadline } from './deadline.js';
import * as mysqlSchema from './schema/mysql.js';
import { createScopedContext } from './scoped-context.js';

/** mysql2 and its Drizzle glue, loaded only when the app uses MySQL/MariaDB. */
export async function loadMysqlDriver() {
  return importDriver('mysql', async () => {
    const [driver, orm, migrator] = await Promise.all([
      import('mysql2'),
      import('drizzle-orm/mysql2'),
      import('drizzle-orm/mysql2/migrator'),
    ]);
    return { mysql: driver.default, drizzle: orm.drizzle, migrate: migrator.migrate };
  });
}

type MysqlDriver = Awaited<ReturnType<typeof loadMysqlDriver>>;

/** InnoDB chose this transaction as a deadlock victim and rolled it back whole. */
const ER_LOCK_DEADLOCK = 1213;
/** A lock stayed held past innodb_lock_wait_timeout (the statement was rolled back). */
const ER_LOCK_WAIT_TIMEOUT = 1205;
/** Attempts of one kit transaction (or statement outside one) before a lock conflict is a StorageError. */
export const MYSQL_LOCK_ATTEMPTS = 4;

/** True for the lock conflicts that succeed when simply run again. */
export function isLockConflict(err: unknown): boolean {
  let e: unknown = err;
  // Drizzle wraps the driver's error (DrizzleQueryError.cause); StorageError keeps it as cause too.
  for (let depth = 0; depth < 4 && e instanceof Error; depth++) {
    const errno = (e as { errno?: unknown }).errno;
    if (errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_WAIT_TIMEOUT) return true;
    e = e.cause;
  }
  return false;
}

/**
 * mysql2 connection settings from a `mysql://` URL. Query parameters pass
 * through as mysql2 reads them (e.g. `?ssl={"rejectUnauthorized":true}`), but
 * the settings the kit's correctness rests on are forced after them.
 */
function connectionConfig(url: string, max: number, timeoutMs: number) {
  const parsed = new URL(url);
  const options: Record<string, unknown> = {};
  for (const [name, value] of parsed.searchParams) {
    try {
      options[name] = JSON.parse(value);
    } catch {
      options[name] = value;
    }
  }
  const host = parsed.hostname;
  return {
    ...options,
    host: decodeURIComponent(host.startsWith('[') ? host.slice(1, -1) : host),
    port: parsed.port === '' ? 3306 : Number(parsed.port),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.slice(1)),
    connectionLimit: max,
    connectTimeout: timeoutMs,
    // mysql2 sets CLIENT_FOUND_ROWS by default: affectedRows would then count
    // rows matched, not changed, and a claim of an id already claimed
    // (INSERT … ON DUPLICATE KEY UPDATE that changes nothing) would report 1
    // row, i.e. succeed again. LOCAL_FILES would let the server ask this
    // process for any local file (LOAD DATA LOCAL INFILE).
    flags: ['-FOUND_ROWS', '-LOCAL_FILES'],
    multipleStatements: false,
    // Drizzle writes and reads DATETIME as UTC text; the session zone only
    // matters to NOW() and TIMESTAMP columns, so pin it too.
    timezone: 'Z',
  };
}

/** A table name quoted for MySQL. */
const quote = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** Rows an UPDATE matched (as on Postgres/SQLite), or rows a DELETE/INSERT changed. */
function affectedRows(result: unknown): number {
  const header = (Array.isArray(result) ? result[0] : result) as
    | { affectedRows?: number; info?: string }
    | undefined;
  // With FOUND_ROWS off, affectedRows of an UPDATE counts changed rows; the
  // server's info line still says how many matched, which is what the
  // repositories mean ("did the row qualify").
  const matched = /Rows matched:\s*(\d+)/.exec(header?.info ?? '')?.[1];
  return matched === undefined ? Number(header?.affectedRows ?? 0) : Number(matched);
}

/** Opens a mysql2 pool on `url` behind the dialect adapter. */
export function openMysql(
  driver: MysqlDriver,
  url: string,
  options: AdapterOptions,
): DialectAdapter {
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORAGE_TIMEOUT_MS;
  const pool: Pool = driver.mysql.createPool(
    connectionConfig(url, options.pool?.max ?? 10, timeoutMs),
  );
  // A connection the server drops must not crash the process: mysql2 emits
  // 'error' on an idle connection, which with no listener would throw.
  const onConnectionError = (err: Error): void => {
    options.logger?.warn({ errorCode: (err as { code?: unknown }).code }, 'mysql connection lost');
  };
  pool.on('connection', (connection: PoolConnection) => {
    connection.on('error', onConnectionError);
    // Read committed, as on Postgres: fewer gap locks (and so fewer deadlocks)
    // than InnoDB's default repeatable read, and each statement sees the latest
    // commits. Queued before any query the pool hands this connection out for.
    // A row lock held by another transaction fails the statement within the
    // deadline (whole seconds, at least 1) instead of InnoDB's 50 s.
    connection.query(
      `SET SESSION innodb_lock_wait_timeout = ${Math.max(1, Math.ceil(timeoutMs / 1000))}`,
      (err) => {
        if (err) {
          options.logger?.warn(
            { errorCode: (err as { code?: unknown }).code },
            'mysql: could not set innodb_lock_wait_timeout on a new connection',
          );
        }
      },
    );
    connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', (err) => {
      if (err) {
        options.logger?.warn(
          { errorCode: (err as { code?: unknown }).code },
          'mysql: could not set READ COMMITTED on a new connection',
        );
      }
    });
  });
  const db = driver.drizzle(pool) as MySql2Database;
  const current = createScopedContext<TxContext<Db>>();

  async function backoff(attempt: number, err: unknown): Promise<void> {
    options.logger?.debug(
      { errorCode: (err as { code?: unknown }).code, attempt },
      'mysql lock conflict; retrying',
    );
    // Jittered, growing: two victims of one deadlock should not collide again.
    await sleep(5 * 2 ** attempt + Math.random() * 20);
  }

  async function run<T>(what: string, fn: (db: Db) => Promise<T>): Promise<T> {
    const inTx = activeTx(current);
    for (let attempt = 1; ; attempt++) {
      try {
        return await withDeadline(what, timeoutMs, () => fn((inTx?.tx ?? db) as unknown as Db));
      } catch (err) {
        // Outside a transaction the statement was rolled back on its own and
        // can simply run again; inside one, the transaction decides.
        if (!inTx && isLockConflict(err) && attempt < MYSQL_LOCK_ATTEMPTS) {
          await backoff(attempt, err);
          continue;
        }
        throw storageError(what, err);
      }
    }
  }

  const transaction = <T>(
    fn: (tx: Db) => Promise<T>,
    txOptions: TransactionOptions = {},
  ): Promise<T> => {
    const run = () =>
      driverTransaction(current, db, fn, {
        conflict: isLockConflict,
        attempts: txOptions.retryOnLockConflict ? MYSQL_LOCK_ATTEMPTS : 1,
        backoff,
      });
    return activeTx(current) ? run() : watchedTransaction(timeoutMs, run);
  };

  return {
    dialect: 'mysql',
    db,
    tables: mysqlSchema as unknown as KitTables,
    run,
    transaction,
    affected: affectedRows,
    async scrub(tables) {
      if (tables.length === 0) return true;
      if (activeTx(current)) return false;
      // InnoDB only delete-marks rows; their bytes stay in the table's pages
      // until reused. OPTIMIZE TABLE rebuilds the table (a new tablespace
      // without the deleted rows) online; what it cannot reach (redo and undo
      // logs until overwritten, binary logs, freed file blocks) is in docs/security.md.
      try {
        const [rows] = await pool
          .promise()
          .query(`OPTIMIZE TABLE ${tables.map((name) => quote(name)).join(', ')}`);
        const failed = (rows as Array<{ Msg_type?: string }>).some(
          (r) => String(r.Msg_type).toLowerCase() === 'error',
        );
        if (failed) {
          options.logger?.warn(
            { event: 'purge.scrub_failed' },
            'OPTIMIZE TABLE after a purge reported an error; the rows are deleted but may stay on disk until InnoDB reuses their pages',
          );
        }
        return !failed;
      } catch (err) {
        options.logger?.warn(
          { event: 'purge.scrub_failed', errorCode: (err as { code?: unknown }).code },
          'OPTIMIZE TABLE after a purge failed; the rows are deleted but may stay on disk until InnoDB reuses their pages',
        );
        return false;
      }
    },
    async migrate() {
      let connection: PoolConnection;
      try {
        connection = await new Promise<PoolConnection>((resolve, reject) =>
          pool.getConnection((err, c) => (err ? reject(err) : resolve(c))),
        );
      } catch (err) {
        throw storageError('connecting to MySQL', err);
      }
      const conn = connection.promise();
      try {
        // One migrator at a time across processes starting together. GET_LOCK
        // is server-wide, so the name carries the database (hashed: names are
        // limited to 64 characters).
        const lockName = "CONCAT(?, ':', LEFT(SHA1(DATABASE()), 32))";
        const [rows] = await conn.query(`SELECT GET_LOCK(${lockName}, 120) AS got`, [
          MIGRATIONS_TABLE,
        ]);
        if ((rows as Array<{ got: number | null }>)[0]?.got !== 1) {
          throw Object.assign(new Error('migration lock not acquired'), {
            code: 'MIGRATION_LOCK_TIMEOUT',
          });
        }
        try {
          await driver.migrate(driver.drizzle(connection), {
            migrationsFolder: join(MIGRATIONS_ROOT, 'mysql'),
            migrationsTable: MIGRATIONS_TABLE,
          });
        } finally {
          await conn.query(`SELECT RELEASE_LOCK(${lockName})`, [MIGRATIONS_TABLE]);
        }
      } catch (err) {
        throw storageError('applying MySQL migrations', err);
      } finally {
        connection.release();
      }
      options.logger?.debug({ dialect: 'mysql' }, 'store-app-kit migrations applied');
    },
    async close() {
      await pool.promise().end();
    },
  };
}
