/**
 * The statements MySQL / MariaDB spells differently: it has neither RETURNING
 * nor ON CONFLICT, only INSERT … ON DUPLICATE KEY UPDATE, whose affected-rows
 * count says what happened (1 inserted, 2 updated, 0 unchanged) as long as the
 * connection has FOUND_ROWS off (./mysql.ts sets it). The repositories call
 * these where the other dialects use ON CONFLICT … RETURNING.
 */
import { getTableColumns, getTableName, type SQL, sql } from 'drizzle-orm';
import type { Db } from './adapter.js';

/** How many rows INSERT … ON DUPLICATE KEY UPDATE touched: 1 inserted, 2 updated, 0 unchanged. */
function insertOutcome(result: unknown): number {
  const header = (Array.isArray(result) ? result[0] : result) as { affectedRows?: number };
  return Number(header?.affectedRows ?? 0);
}

// biome-ignore lint/suspicious/noExplicitAny: the MySQL builders of the runtime schema.
type AnyMysql = any;

/**
 * INSERT, or UPDATE `set` when the key exists (ON DUPLICATE KEY UPDATE).
 * Returns 1 when inserted, 2 when updated, 0 when the existing row already
 * held those values (the connection has FOUND_ROWS off).
 */
export async function mysqlUpsert(
  db: Db,
  table: AnyMysql,
  values: Record<string, unknown>,
  set: Record<string, unknown>,
): Promise<number> {
  return insertOutcome(
    await (db as AnyMysql).insert(table).values(values).onDuplicateKeyUpdate({ set }),
  );
}

/** INSERT unless a row with the same key exists; true when this call inserted it. */
export async function mysqlInsertIfAbsent(
  db: Db,
  table: AnyMysql,
  values: Record<string, unknown>,
  key: AnyMysql,
): Promise<boolean> {
  // `key = key` changes nothing, so a duplicate reports 0 rows (not INSERT
  // IGNORE, which would also turn a too-long value into a silent truncation).
  return (await mysqlUpsert(db, table, values, { [columnKey(table, key)]: sql`${key}` })) === 1;
}

/** The property name of `column` in `table` (ON DUPLICATE KEY UPDATE sets by property). */
function columnKey(table: AnyMysql, column: AnyMysql): string {
  const entry = Object.entries(getTableColumns(table)).find(([, c]) => c === column);
  if (!entry) throw new Error(`column not in ${getTableName(table)}`);
  return entry[0];
}

/**
 * claimOnce's statement: insert the claim, or take over an expired one. The
 * IF keeps an unexpired claim as it is, which reports 0 rows: refused.
 */
export async function mysqlClaim(
  db: Db,
  table: AnyMysql,
  values: { namespace: string; id: string; expiresAt: Date },
  now: Date,
): Promise<boolean> {
  const expiresAt = table.expiresAt;
  const taken: SQL = sql`IF(${expiresAt} <= ${expiresAt.mapToDriverValue(now)}, VALUES(${expiresAt}), ${expiresAt})`;
  return (await mysqlUpsert(db, table, values, { expiresAt: taken })) > 0;
}
