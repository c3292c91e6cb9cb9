import { and, eq, sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { CREATE_PRODUCT_NOTES, type Dialect, productNotesFor } from './schema.js';

type MysqlUpsert = { onDuplicateKeyUpdate(config: { set: object }): Promise<unknown> };

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

/**
 * Every query filters on store_id: a store never reads another store's notes.
 * `db` is the kit's Drizzle handle; it is typed as the SQLite one because the
 * query-builder calls used here are the same on every dialect (but the upsert).
 */
export function createNotesRepository(db: unknown, dialect: Dialect): NotesRepository {
  const d = db as BetterSQLite3Database;
  const notes = productNotesFor(dialect);
  const columns = { productId: notes.productId, note: notes.note, updatedAt: notes.updatedAt };
  return {
    async list(storeId) {
      return d.select(columns).from(notes).where(eq(notes.storeId, storeId));
    },
    async save(storeId, productId, note) {
      const updatedAt = new Date();
      const insert = d.insert(notes).values({ storeId, productId, note, updatedAt });
      if (dialect === 'mysql') {
        // MySQL has no ON CONFLICT; its upsert is ON DUPLICATE KEY UPDATE.
        await (insert as unknown as MysqlUpsert).onDuplicateKeyUpdate({ set: { note, updatedAt } });
      } else {
        await insert.onConflictDoUpdate({
          target: [notes.storeId, notes.productId],
          set: { note, updatedAt },
        });
      }
      return { productId, note, updatedAt };
    },
    async remove(storeId, productId) {
      await d.delete(notes).where(and(eq(notes.storeId, storeId), eq(notes.productId, productId)));
    },
  };
}

/** Creates the app's tables if missing (the kit migrates its own tables itself). */
export async function migrateAppTables(db: unknown, dialect: Dialect): Promise<void> {
  for (const statement of CREATE_PRODUCT_NOTES[dialect]) {
    if (dialect !== 'sqlite') {
      await (db as { execute(q: unknown): Promise<unknown> }).execute(sql.raw(statement));
    } else {
      (db as BetterSQLite3Database).run(sql.raw(statement));
    }
  }
}
