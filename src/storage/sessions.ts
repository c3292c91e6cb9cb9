/**
 * The built-in storage's session operations on the kit's sessions table.
 * Rows carry the session's store id so a purge can delete a store's sessions.
 * The session-store port over them is ./session-store.ts (on any adapter).
 */
import { and, eq, gt, lte } from 'drizzle-orm';
import type { DialectAdapter } from './adapter.js';
import type { SessionAdapter } from './contract.js';
import { mysqlUpsert } from './mysql-statements.js';

export function createSessionRepository(adapter: DialectAdapter): SessionAdapter {
  const t = adapter.tables.sessions;
  return {
    async get(sid, now) {
      const rows = await adapter.run('reading a session', (db) =>
        db
          .select()
          .from(t)
          .where(and(eq(t.sid, sid), gt(t.expiresAt, now)))
          .limit(1),
      );
      const row = rows[0];
      return row
        ? {
            storeId: row.storeId ?? null,
            data: row.data as Record<string, unknown>,
            expiresAt: row.expiresAt,
          }
        : null;
    },

    async set(sid, record) {
      const values = { storeId: record.storeId, data: record.data, expiresAt: record.expiresAt };
      await adapter.run('storing a session', async (db) => {
        if (adapter.dialect === 'mysql') {
          await mysqlUpsert(db, t, { sid, ...values }, values);
        } else {
          await db
            .insert(t)
            .values({ sid, ...values })
            .onConflictDoUpdate({ target: t.sid, set: values });
        }
      });
    },

    async touch(sid, record) {
      await adapter.run('touching a session', (db) =>
        db.update(t).set({ data: record.data, expiresAt: record.expiresAt }).where(eq(t.sid, sid)),
      );
    },

    async destroy(sid) {
      await adapter.run('deleting a session', (db) => db.delete(t).where(eq(t.sid, sid)));
    },

    async prune(now) {
      const result = await adapter.run('pruning expired sessions', (db) =>
        db.delete(t).where(lte(t.expiresAt, now)),
      );
      return adapter.affected(result);
    },
  };
}
