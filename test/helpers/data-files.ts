/**
 * Reading a database server's own files, to count the bytes a purge left
 * behind (the tests run as root on the machine of the server; read only).
 * Postgres: a table's heap, TOAST and index files (every 1 GB segment) after
 * a CHECKPOINT wrote its pages; the WAL segments. InnoDB: a table's `.ibd`
 * file (rows and indexes) after `FLUSH TABLES … FOR EXPORT` wrote its pages;
 * the redo log.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type mysql from 'mysql2/promise';
import type pg from 'pg';

function segments(path: string): string[] {
  const files: string[] = [];
  for (let i = 0; ; i++) {
    const file = i === 0 ? path : `${path}.${i}`;
    if (!existsSync(file)) break;
    files.push(file);
  }
  return files;
}

function needRoot(file: string | undefined, what: string): void {
  if (file === undefined || !existsSync(file)) {
    throw new Error(
      `this test reads the database server's ${what} (${file}): run it against the server of this machine, as root`,
    );
  }
}

/** The files of `tables` (heap, TOAST, indexes) in the Postgres data directory, after a CHECKPOINT. */
export async function postgresTableFiles(
  client: pg.Client,
  tables: readonly string[],
): Promise<string[]> {
  await client.query('CHECKPOINT');
  const dir = (await client.query('SHOW data_directory')).rows[0].data_directory as string;
  const { rows } = await client.query<{ path: string | null }>(
    `WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE oid = ANY($1::regclass[]))
     SELECT pg_relation_filepath(c.oid) AS path FROM pg_class c
     WHERE c.oid IN (SELECT oid FROM t)
        OR c.oid IN (SELECT reltoastrelid FROM t)
        OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t UNION SELECT reltoastrelid FROM t))`,
    [tables],
  );
  const files = rows.filter((r) => r.path).flatMap((r) => segments(join(dir, r.path as string)));
  needRoot(files[0] ?? join(dir, 'base'), 'data files');
  return files;
}

/** The Postgres WAL segments now in pg_wal (the server's, shared by every database). */
export async function postgresWalFiles(client: pg.Client): Promise<string[]> {
  const dir = (await client.query('SHOW data_directory')).rows[0].data_directory as string;
  const wal = join(dir, 'pg_wal');
  needRoot(wal, 'WAL directory');
  return readdirSync(wal)
    .filter((f) => /^[0-9A-F]{24}$/.test(f))
    .map((f) => join(wal, f));
}

/** The `.ibd` files of `tables` of `database`, after their pages were flushed to them. */
export async function innodbTableFiles(
  conn: mysql.Connection,
  database: string,
  tables: readonly string[],
): Promise<string[]> {
  const [rows] = await conn.query('SELECT @@datadir AS d');
  const dir = (rows as Array<{ d: string }>)[0]?.d as string;
  // InnoDB writes pages at its own pace: FLUSH … FOR EXPORT writes them now.
  await conn.query(`FLUSH TABLES ${tables.map((t) => `\`${t}\``).join(', ')} FOR EXPORT`);
  await conn.query('UNLOCK TABLES');
  const files = tables.map((t) => join(dir, database, `${t}.ibd`));
  needRoot(files[0], 'table files');
  return files;
}

/** The InnoDB redo log files (MariaDB ib_logfile*, MySQL #innodb_redo/*). */
export async function innodbRedoFiles(conn: mysql.Connection): Promise<string[]> {
  const [rows] = await conn.query('SELECT @@datadir AS d');
  const dir = (rows as Array<{ d: string }>)[0]?.d as string;
  const redo = join(dir, '#innodb_redo');
  if (existsSync(redo)) return readdirSync(redo).map((f) => join(redo, f));
  return readdirSync(dir)
    .filter((f) => f.startsWith('ib_logfile'))
    .map((f) => join(dir, f));
}

/** How many of `needles` occur at least once in any of `files`. */
export function countFound(files: readonly string[], needles: readonly string[]): number {
  const contents = files.map((f) => readFileSync(f));
  return needles.filter((n) => {
    const bytes = Buffer.from(n);
    return contents.some((c) => c.includes(bytes));
  }).length;
}
