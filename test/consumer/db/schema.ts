// The app tables docs/webhooks.md's example imports, as an app would define them.
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const productNotes = sqliteTable('product_notes', {
  storeId: text('store_id').notNull(),
  productId: text('product_id').notNull(),
  note: text('note').notNull(),
});

export const churnLog = sqliteTable('churn_log', {
  id: integer('id').primaryKey(),
  storeId: text('store_id').notNull(),
});
export type ChurnLog = typeof churnLog;
