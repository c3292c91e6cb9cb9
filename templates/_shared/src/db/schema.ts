/**
 * The app's own table, declared once per dialect so switching DATABASE_URL
 * between SQLite, Postgres and MySQL/MariaDB needs no code change. Every row belongs to one
 * store (`store_id`), which is what lets the kit delete it on uninstall.
 */
import {
  datetime,
  index as mysqlIndex,
  primaryKey as mysqlPrimaryKey,
  mysqlTable,
  text as mysqlText,
  varchar,
} from 'drizzle-orm/mysql-core';
import {
  index as pgIndex,
  primaryKey as pgPrimaryKey,
  pgTable,
  text as pgText,
  timestamp,
} from 'drizzle-orm/pg-core';
import {
  integer,
  index as sqliteIndex,
  primaryKey as sqlitePrimaryKey,
  sqliteTable,
  text,
} from 'drizzle-orm/sqlite-core';

export const sqliteProductNotes = sqliteTable(
  'product_notes',
  {
    storeId: text('store_id').notNull(),
    productId: text('product_id').notNull(),
    note: text('note').notNull(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [
    sqlitePrimaryKey({ columns: [t.storeId, t.productId] }),
    sqliteIndex('product_notes_store_idx').on(t.storeId),
  ],
);

export const pgProductNotes = pgTable(
  'product_notes',
  {
    storeId: pgText('store_id').notNull(),
    productId: pgText('product_id').notNull(),
    note: pgText('note').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    pgPrimaryKey({ columns: [t.storeId, t.productId] }),
    pgIndex('product_notes_store_idx').on(t.storeId),
  ],
);

// MySQL indexes VARCHAR, not TEXT, and keeps milliseconds only with DATETIME(3).
export const mysqlProductNotes = mysqlTable(
  'product_notes',
  {
    storeId: varchar('store_id', { length: 255 }).notNull(),
    productId: varchar('product_id', { length: 255 }).notNull(),
    note: mysqlText('note').notNull(),
    updatedAt: datetime('updated_at', { mode: 'date', fsp: 3 }).notNull(),
  },
  (t) => [
    mysqlPrimaryKey({ columns: [t.storeId, t.productId] }),
    mysqlIndex('product_notes_store_idx').on(t.storeId),
  ],
);

export type Dialect = 'sqlite' | 'postgres' | 'mysql';

/**
 * The table for the active dialect. Both definitions have the same columns, so
 * the rest of the app uses the SQLite type; Drizzle builds the SQL from the
 * runtime table and database, which always match.
 */
export function productNotesFor(dialect: Dialect): typeof sqliteProductNotes {
  const tables = { sqlite: sqliteProductNotes, postgres: pgProductNotes, mysql: mysqlProductNotes };
  return tables[dialect] as unknown as typeof sqliteProductNotes;
}

/** Idempotent DDL for `npm run migrate` and start-up; small enough not to need drizzle-kit. */
export const CREATE_PRODUCT_NOTES: Record<Dialect, string[]> = {
  sqlite: [
    `CREATE TABLE IF NOT EXISTS product_notes (
      store_id TEXT NOT NULL,
      product_id TEXT NOT NULL,
      note TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (store_id, product_id)
    )`,
    'CREATE INDEX IF NOT EXISTS product_notes_store_idx ON product_notes (store_id)',
  ],
  postgres: [
    `CREATE TABLE IF NOT EXISTS product_notes (
      store_id TEXT NOT NULL,
      product_id TEXT NOT NULL,
      note TEXT NOT NULL,
      updated_at TIMESTAMPTZ NOT NULL,
      PRIMARY KEY (store_id, product_id)
    )`,
    'CREATE INDEX IF NOT EXISTS product_notes_store_idx ON product_notes (store_id)',
  ],
  mysql: [
    `CREATE TABLE IF NOT EXISTS product_notes (
      store_id VARCHAR(255) NOT NULL,
      product_id VARCHAR(255) NOT NULL,
      note TEXT NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (store_id, product_id),
      KEY product_notes_store_idx (store_id)
    )`,
  ],
};
