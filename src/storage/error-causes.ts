/**
 * What a driver error says about the database, in words an operator can act
 * on: a full disk, a read-only database, a lock held too long, a server that
 * cannot be reached, a deadline passed, or missing migrations. The stable
 * `code` of the error stays `STORAGE_UNAVAILABLE`; the reason and its fix go
 * into the message and `StorageError.reason`.
 */
import type { StorageFailureReason } from '../errors/index.js';
import { DATABASE_URL_SETTING } from './url.js';

const DISK_FULL = new Set(['ENOSPC', 'EDQUOT', '53100', 'ER_DISK_FULL', 'ER_RECORD_FILE_FULL']);
const READ_ONLY = new Set([
  'EROFS',
  '25006',
  'ER_OPTION_PREVENTS_STATEMENT',
  'ER_READ_ONLY_MODE',
  'ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION',
]);
const LOCKED = new Set([
  '55P03',
  '40P01',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  'ER_CANT_LOCK',
  'ER_LOCK_NOWAIT',
]);
const TIMEOUT = new Set([
  '57014',
  'ETIMEDOUT',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_QUERY_TIMEOUT',
  'ER_STATEMENT_TIMEOUT',
  'STORAGE_DEADLINE',
]);
const UNREACHABLE = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '3D000',
  '28000',
  '28P01',
  '53300',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_SERVER_SHUTDOWN',
  'ER_NORMAL_SHUTDOWN',
  'ER_SHUTDOWN_COMPLETE',
  'ER_CONNECTION_KILLED',
  'ER_ACCESS_DENIED_ERROR',
  'ER_BAD_DB_ERROR',
  'ER_HOST_IS_BLOCKED',
]);
const SCHEMA = new Set(['42P01', '42703', 'ER_NO_SUCH_TABLE', 'ER_BAD_FIELD_ERROR']);

/** The driver's error code (SQLSTATE, errno name, SQLITE_*), if any. */
export function driverCode(driver: unknown): string | undefined {
  const code = (driver as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Why the database failed, from the driver's error; `unknown` when it does not say. */
export function classifyStorageFailure(driver: unknown): StorageFailureReason {
  const code = driverCode(driver);
  const message = driver instanceof Error ? driver.message : '';
  if (code !== undefined) {
    if (DISK_FULL.has(code) || code.startsWith('SQLITE_FULL')) return 'disk_full';
    if (READ_ONLY.has(code) || code.startsWith('SQLITE_READONLY')) return 'read_only';
    if (LOCKED.has(code) || /^SQLITE_(BUSY|LOCKED)/.test(code)) return 'locked';
    if (TIMEOUT.has(code)) return 'timeout';
    if (SCHEMA.has(code)) return 'schema';
    if (UNREACHABLE.has(code) || /^(08...|57P0[1-5])$/.test(code)) return 'unreachable';
    if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR')) {
      return /ENOSPC|disk is full/i.test(message) ? 'disk_full' : 'unreachable';
    }
    if (code === '55000' && /accepting connections|allow connections/i.test(message)) {
      return 'unreachable';
    }
    if (code.startsWith('SQLITE_ERROR') && /no such (table|column)/.test(message)) return 'schema';
  }
  if (/^(Query read timeout|Connection terminated due to connection timeout)/.test(message)) {
    return 'timeout';
  }
  if (/^timeout exceeded when trying to connect/.test(message)) return 'timeout';
  if (
    /^(Connection terminated|Client has encountered a connection error|Client was closed|Pool is closed|Can't add new command when connection is in closed state)/.test(
      message,
    )
  ) {
    return 'unreachable';
  }
  return 'unknown';
}

/** What the operator does about each reason. */
const FIX: Record<StorageFailureReason, string> = {
  disk_full:
    'the disk holding the database is full: free space on that volume (or grow it); writes resume without a restart',
  read_only: `the database is read-only: for SQLite make the file, its folder and its -wal/-shm files writable by this process; for Postgres/MySQL point ${DATABASE_URL_SETTING} at the primary, not a replica, and check the server's read-only setting`,
  locked:
    'the database is locked by another connection or process past the wait limit: find the long-running transaction holding the lock (SQLite: another process writing the same file; raise storage.sqlite.busyTimeoutMs only if it is expected)',
  timeout:
    'the database did not answer within the storage deadline (storage.timeoutMs): check that the server is not stalled or overloaded and that the network to it is up',
  unreachable: `the database cannot be reached: check that the server in ${DATABASE_URL_SETTING} is running and reachable from this host (host, port, credentials, database name, firewall)`,
  schema:
    'a table or column the kit needs is missing: run `npx store-app migrate` (or start with storage.migrate on)',
  unknown: `check that the database in ${DATABASE_URL_SETTING} is reachable and migrated (\`npx store-app migrate\`)`,
};

/** The message of a StorageError: what failed, the driver code, the cause and its fix. */
export function storageFailureMessage(
  what: string,
  reason: StorageFailureReason,
  code: string | undefined,
): string {
  return `${what} failed${code ? ` (${code})` : ''}; ${FIX[reason]}`;
}
