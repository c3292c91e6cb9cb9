/**
 * Opens the built-in database of a target. Only the configured dialect's driver is
 * imported, so a SQLite app never loads `pg` and a Postgres app needs no native
 * SQLite build; a driver that is not installed fails here, at start. (Apart from
 * ./adapter.ts, which ./mysql.ts builds on: the MySQL code is loaded from here.)
 */
import {
  type AdapterOptions,
  type DialectAdapter,
  openPostgresAdapter,
  openSqliteAdapter,
} from './adapter.js';
import type { DatabaseTarget } from './url.js';

/** The dialect adapter of `target`, its driver loaded on demand. */
export async function openAdapter(
  target: DatabaseTarget,
  options: AdapterOptions,
): Promise<DialectAdapter> {
  switch (target.dialect) {
    case 'sqlite':
      return openSqliteAdapter(target.filename, options);
    case 'postgres':
      return openPostgresAdapter(target.url, options);
    case 'mysql': {
      // Imported here, not at the top: only a MySQL app loads the MySQL code.
      const { loadMysqlDriver, openMysql } = await import('./mysql.js');
      return openMysql(await loadMysqlDriver(), target.url, options);
    }
  }
}
