/**
 * D1's failures as the kit's StorageError. D1 reports errors as plain
 * `Error`s whose message carries the cause ("D1_ERROR: no such table: …:
 * SQLITE_ERROR"); Drizzle wraps a single query's error in one that lists the
 * SQL parameters (ciphertexts, hashes), which never reach a message here.
 */
import { StorageError, type StorageFailureReason, StoreAppError } from '../../errors/index.js';

const FIX: Record<StorageFailureReason, string> = {
  disk_full:
    'the D1 database reached its size limit: delete data you no longer need, or move to a plan with larger databases',
  read_only: 'the D1 database refused a write: check that the binding names a writable database',
  locked:
    'another instance held the lock on this record past the storage deadline: it is still working on it, or crashed and its lock ends within 30 s; the platform or the outbox retries',
  timeout:
    'D1 did not answer in time or is overloaded (too many queued requests): retry later, and spread the load if it persists',
  unreachable:
    'D1 could not be reached or reset its connection: retry; check the binding in wrangler configuration',
  schema:
    'a table the kit needs is missing: apply the kit\'s D1 migrations (`wrangler d1 migrations apply`, see docs/storage.md "Cloudflare D1"), or pass applyMigrations: true for local development',
  database_missing:
    'the binding names no D1 database: create it (`wrangler d1 create <name>`) and put its id under d1_databases in the wrangler configuration',
  access_denied:
    'D1 refused the request: check that the binding in the wrangler configuration names a database of this account',
  unknown: "check the D1 binding and that the kit's D1 migrations are applied",
};

/** The error D1 itself raised (under Drizzle's wrapper, which carries the parameters). */
export function d1Cause(err: unknown): unknown {
  return err instanceof Error && 'params' in err && 'query' in err && err.cause !== undefined
    ? err.cause
    : err;
}

function messageOf(err: unknown): string {
  let text = '';
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 3; depth++) {
    text += ` ${e.message}`;
    e = e.cause;
  }
  return text;
}

/** Why D1 failed, from its message. */
export function classifyD1Failure(err: unknown): StorageFailureReason {
  const text = messageOf(d1Cause(err));
  if (/no such (table|column)/i.test(text)) return 'schema';
  if (
    /SQLITE_FULL|exceeded (the )?maximum (DB|database) size|database or disk is full/i.test(text)
  ) {
    return 'disk_full';
  }
  if (/SQLITE_READONLY|read-only|readonly/i.test(text)) return 'read_only';
  if (/SQLITE_BUSY|SQLITE_LOCKED/.test(text)) return 'locked';
  if (/overloaded|too many requests|timed? ?out|deadline/i.test(text)) return 'timeout';
  if (
    /network connection lost|connection (was )?reset|internal error|object to be reset|D1_RESET_DO|cannot resolve D1/i.test(
      text,
    )
  ) {
    return 'unreachable';
  }
  return 'unknown';
}

/** True when D1 failed rather than the statement (a constraint, a syntax error). */
export function isD1Unavailable(err: unknown): boolean {
  return !(err instanceof StoreAppError) && classifyD1Failure(err) !== 'unknown';
}

/** A D1 failure as StorageError naming `what`; the kit's own errors pass through. */
export function d1StorageError(what: string, err: unknown): StoreAppError {
  if (err instanceof StoreAppError) return err;
  const driver = d1Cause(err);
  const reason = classifyD1Failure(driver);
  const code = /\b(SQLITE_[A-Z_]+|D1_[A-Z_]+)\b/.exec(messageOf(driver))?.[1];
  return new StorageError(`${what} failed${code ? ` (${code})` : ''}; ${FIX[reason]}`, {
    cause: driver,
    reason,
  });
}

/** A StorageError of `reason` with the D1 fix, for failures the adapter detects itself. */
export function d1Failure(
  what: string,
  reason: StorageFailureReason,
  detail: string,
): StorageError {
  return new StorageError(`${what} failed: ${detail}; ${FIX[reason]}`, { reason });
}
