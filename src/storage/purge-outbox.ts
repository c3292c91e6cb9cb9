/**
 * The purge outbox's storage: one row per uninstall event whose purge is not
 * done yet. Kept apart from ./repositories.ts: it is only read and written by
 * the webhook processor (inside the dedupe transaction) and src/purge/outbox.ts.
 */
import { asc, eq, lte, sql } from 'drizzle-orm';
import type { DialectAdapter } from './adapter.js';
import type { PendingPurgeRecord, PurgeOutboxAdapter } from './contract.js';
import { mysqlInsertIfAbsent } from './mysql-statements.js';

export function createPendingPurgeRepository(adapter: DialectAdapter): PurgeOutboxAdapter {
  const t = adapter.tables.pendingPurges;
  const toEntry = (row: typeof t.$inferSelect): PendingPurgeRecord => ({
    eventId: row.eventId,
    storeId: row.storeId,
    eventAt: row.eventAt,
    createdAt: row.createdAt,
    attempts: row.attempts,
    nextAttemptAt: row.nextAttemptAt,
    lastError: row.lastError ?? null,
  });
  return {
    async add({ eventId, storeId, eventAt }, now) {
      const values = { eventId, storeId, eventAt, createdAt: now, attempts: 0, nextAttemptAt: now };
      await adapter.run('recording a pending purge', async (db) => {
        if (adapter.dialect === 'mysql') await mysqlInsertIfAbsent(db, t, values, t.eventId);
        else await db.insert(t).values(values).onConflictDoNothing({ target: t.eventId });
      });
    },

    async due(now, limit) {
      const rows = await adapter.run('listing due purges', (db) =>
        db
          .select()
          .from(t)
          .where(lte(t.nextAttemptAt, now))
          .orderBy(asc(t.nextAttemptAt), asc(t.eventId))
          .limit(limit),
      );
      return rows.map(toEntry);
    },

    async recordFailure(eventId, nextAttemptAt, errorCode) {
      await adapter.run('recording a failed purge attempt', (db) =>
        db
          .update(t)
          .set({
            attempts: sql`${t.attempts} + 1`,
            nextAttemptAt,
            lastError: errorCode.slice(0, 64),
          })
          .where(eq(t.eventId, eventId)),
      );
    },

    async complete(eventId) {
      await adapter.run('completing a pending purge', (db) =>
        db.delete(t).where(eq(t.eventId, eventId)),
      );
    },
  };
}
