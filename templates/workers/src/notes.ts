/**
 * The app's own table in D1, beside the kit's: a note per product and store.
 * Created by `migrations/0100_product_notes.sql` (wrangler applies it with the
 * kit's migrations). Every row belongs to one store (`store_id`): every query
 * filters on it, and the uninstall purge deletes the store's rows (`purgeNotes`).
 */
import { and, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/d1';
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import type { D1DatabaseBinding, D1Drizzle, D1Transaction } from 'store-app-kit/storage/d1';

export const productNotes = sqliteTable(
  'product_notes',
  {
    storeId: text('store_id').notNull(),
    productId: text('product_id').notNull(),
    note: text('note').notNull(),
    updatedAt: integer('updated_at', { mode: 'timestamp_ms' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.storeId, t.productId] }),
    index('product_notes_store_idx').on(t.storeId),
  ],
);

/** Longest note accepted; longer input is a 422, not a truncation. */
export const MAX_NOTE_LENGTH = 1000;

export interface ProductNote {
  productId: string;
  note: string;
  updatedAt: Date;
}

export interface NotesRepository {
  list(storeId: string): Promise<ProductNote[]>;
  save(storeId: string, productId: string, note: string): Promise<ProductNote>;
  remove(storeId: string, productId: string): Promise<void>;
}

/** Drizzle on the Worker's D1 binding (typed without @cloudflare/workers-types). */
export function notesDb(binding: D1DatabaseBinding): D1Drizzle {
  return drizzle(binding as Parameters<typeof drizzle>[0]) as unknown as D1Drizzle;
}

export function createNotesRepository(db: D1Drizzle): NotesRepository {
  const columns = {
    productId: productNotes.productId,
    note: productNotes.note,
    updatedAt: productNotes.updatedAt,
  };
  return {
    async list(storeId) {
      return db.select(columns).from(productNotes).where(eq(productNotes.storeId, storeId));
    },
    async save(storeId, productId, note) {
      const updatedAt = new Date();
      await db
        .insert(productNotes)
        .values({ storeId, productId, note, updatedAt })
        .onConflictDoUpdate({
          target: [productNotes.storeId, productNotes.productId],
          set: { note, updatedAt },
        });
      return { productId, note, updatedAt };
    },
    async remove(storeId, productId) {
      await db
        .delete(productNotes)
        .where(and(eq(productNotes.storeId, storeId), eq(productNotes.productId, productId)));
    },
  };
}

/**
 * The kit's `onPurge` on D1: the store's notes are deleted in the same batch as its
 * installation and sessions (D1 has no interactive transaction: the write is queued on
 * the kit's handle, committed with the kit's own deletes, all or nothing).
 */
export function purgeNotes(storeId: string, tx: unknown): void {
  const d1 = tx as D1Transaction;
  d1.write(d1.db.delete(productNotes).where(eq(productNotes.storeId, storeId)));
}
