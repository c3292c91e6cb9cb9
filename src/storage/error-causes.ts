/**
 * What a driver error says about the database, in words an operator can act
 * on: a full disk, a read-only database, a lock held too long, a server that
 * cannot be reached, a database that does not exist on it, credentials it
 * refuses, a deadline passed, or missing migrations. The stable
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
  'ER_HOST_IS_BLOCKED',
]);
/** The server answers, but the database named in the URL is not on it. */
const DATABASE_MISSING = new Set(['3D000', 'ER_BAD_DB_ERROR']);
/** The server answers, but refuses the user or password (or this host for that user). */
const ACCESS_DENIED = new Set([
  '28000',
  '28P01',
  'ER_ACCESS_DENIED_ERROR',
  'ER_ACCESS_DENIED_NO_PASSWORD_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_HOST_NOT_PRIVILEGED',
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
    if (DATABASE_MISSING.has(code)) return 'database_missing';
    if (ACCESS_DENIED.has(code)) return 'access_denied';
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
  unreachable: `the database server cannot be reached: check that the server in ${DATABASE_URL_SETTING} is running and reachable from this host (host, port, firewall)`,
  database_missing: `the server answers, but the database named in ${DATABASE_URL_SETTING} does not exist on it: create it (Postgres: \`createdb <name>\`; MySQL/MariaDB: \`CREATE DATABASE <name>\`) or fix the name in ${DATABASE_URL_SETTING}`,
  access_denied: `the server refused the user or password in ${DATABASE_URL_SETTING}: fix them there, or grant that user access to the database from this host`,
  schema:
    'a table or column the kit needs is missing: run `npx store-app migrate` (or start with storage.migrate on)',
  unknown: `check that the database in ${DATABASE_URL_SETTING} is reachable and migrated (\`npx store-app migrate\`)`,
};

/**
 * Reasons whose driver message is about the connection (which server, which database, which
 * user), never about a statement or its parameters: the message names it.
 */
const CONNECTION_REASONS: ReadonlySet<StorageFailureReason> = new Set([
  'unreachable',
  'database_missing',
  'access_denied',
]);

/** A driver's message on one line, any password in a URL it quotes replaced. */
function connectionDetail(driver: unknown): string | undefined {
  const message = driver instanceof Error ? driver.message : undefined;
  if (!message) return undefined;
  return message
    .replace(/\s+/g, ' ')
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s@/]*@/gi, '$1:***@')
    .trim()
    .slice(0, 300);
}

/**
 * The message of a StorageError: what failed, the driver code (with the driver's own words
 * when they are about the connection: "database "x" does not exist"), the cause and its fix.
 */
export function storageFailureMessage(
  what: string,
  reason: StorageFailureReason,
  code: string | undefined,
  driver?: unknown,
): string {
  const detail = CONNECTION_REASONS.has(reason) ? connectionDetail(driver) : undefined;
  const said = [code, detail && detail !== code ? detail : undefined].filter(Boolean).join(': ');
  return `${what} failed${said ? ` (${said})` : ''}; ${FIX[reason]}`;
}
