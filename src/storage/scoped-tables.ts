/**
 * The app's store-scoped tables, checked once at start (a Drizzle table of the
 * active dialect with a `store_id` column, not a kit table): drizzle-orm's table
 * helpers only, no driver, so the configuration and the purge (on every runtime,
 * Workers included) import it without the built-in storage.
 */
import { entityKind, getTableColumns, getTableName } from 'drizzle-orm';
import { ConfigError } from '../errors/index.js';
import type { Dialect, StoreScopedTable } from './types.js';

export interface ScopedTable {
  readonly name: string;
  readonly table: StoreScopedTable;
  // biome-ignore lint/suspicious/noExplicitAny: a Drizzle column of either dialect.
  readonly storeIdColumn: any;
}

const KIT_TABLES = new Set([
  'store_app_installations',
  'store_app_sessions',
  'store_app_webhook_deliveries',
  'store_app_purge_audit',
  'store_app_claims',
  'store_app_pending_purges',
]);

/**
 * Drizzle's entity kind of each dialect's table class and its builder's name.
 * Checked by kind, as drizzle's `is()` does, without importing the table
 * classes: that would load every dialect's core (pg-core alone is 72 modules)
 * into every app.
 */
const TABLE_KINDS = {
  sqlite: ['SQLiteTable', 'sqliteTable'],
  postgres: ['PgTable', 'pgTable'],
  mysql: ['MySqlTable', 'mysqlTable'],
} as const;

/** True when a class in `value`'s constructor chain has Drizzle entity kind `kind`. */
function isEntityOfKind(value: unknown, kind: string): boolean {
  if (value === null || typeof value !== 'object') return false;
  let cls: unknown = Object.getPrototypeOf(value)?.constructor;
  while (typeof cls === 'function') {
    if (
      Object.hasOwn(cls, entityKind) &&
      (cls as { [entityKind]?: unknown })[entityKind] === kind
    ) {
      return true;
    }
    cls = Object.getPrototypeOf(cls);
  }
  return false;
}

/**
 * Checks the app's store-scoped tables once at start: each must be a Drizzle
 * table of the active dialect with a column whose SQL name is `store_id`.
 */
export function validateStoreScopedTables(
  tables: readonly StoreScopedTable[],
  dialect: Dialect,
  setting = 'storeScopedTables',
): ScopedTable[] {
  const seen = new Set<string>();
  return tables.map((table, i) => {
    const [expected, builder] = TABLE_KINDS[dialect];
    if (!isEntityOfKind(table, expected)) {
      throw new ConfigError(
        setting,
        `entry #${i + 1} is not a Drizzle ${builder}; ` +
          `DATABASE_URL selects ${dialect}, so declare the app's tables with that dialect`,
      );
    }
    const name = getTableName(table);
    if (KIT_TABLES.has(name)) {
      throw new ConfigError(setting, `"${name}" is a kit table; list only the app's own tables`);
    }
    if (seen.has(name)) throw new ConfigError(setting, `"${name}" is listed twice`);
    seen.add(name);
    const column = Object.values(getTableColumns(table)).find(
      (c) => (c as { name?: string }).name === 'store_id',
    );
    if (column === undefined) {
      throw new ConfigError(
        setting,
        `table "${name}" has no column named store_id; add one (the purge deletes by it)`,
      );
    }
    return { name, table, storeIdColumn: column };
  });
}
