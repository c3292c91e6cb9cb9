/**
 * The purge outbox's storage: one row per uninstall event whose purge is not
 * done yet. Kept apart from ./repositories.ts: it is only read and written by
 * the webhook processor (inside the dedupe transaction) and src/purge/outbox.ts.
 */
import { and, asc, eq, inArray, isNull, lte, or, sql } from 'drizzle-orm';
import type { DialectAdapter } from './adapter.js';
import type { PendingPurgeKind, PendingPurgeRecord, PurgeOutboxAdapter } from './contract.js';
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
    kind: (row.kind === 'sweep' ? 'sweep' : 'purge') satisfies PendingPurgeKind,
  });
  const byDue = (x: PendingPurgeRecord, y: PendingPurgeRecord) =>
    x.nextAttemptAt.getTime() - y.nextAttemptAt.getTime() ||
    (x.eventId < y.eventId ? -1 : x.eventId > y.eventId ? 1 : 0);
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

    async get(eventId) {
      const rows = await adapter.run('reading a pending purge', (db) =>
        db.select().from(t).where(eq(t.eventId, eventId)).limit(1),
      );
      return rows[0] ? toEntry(rows[0]) : null;
    },

    async lease(now, { owner, until, limit, eventId }) {
      // A compare-and-set portable to the three dialects: pick candidates, then
      // one UPDATE that re-checks "due and free" row by row (Postgres and InnoDB
      // re-evaluate it on the latest committed row; SQLite serialises writers),
      // so of instances racing for an entry exactly one sets its owner.
      const dueAndFree = and(
        eventId === undefined
          ? lte(t.nextAttemptAt, now)
          : and(eq(t.eventId, eventId), or(eq(t.kind, 'purge'), eq(t.leaseOwner, owner))),
        or(isNull(t.leaseUntil), lte(t.leaseUntil, now), eq(t.leaseOwner, owner)),
      );
      const candidates = (
        await adapter.run('listing due purges', (db) =>
          db
            .select({ eventId: t.eventId })
            .from(t)
            .where(dueAndFree)
            .orderBy(asc(t.nextAttemptAt), asc(t.eventId))
            .limit(limit),
        )
      ).map((r) => r.eventId);
      if (candidates.length === 0) return [];
      await adapter.run('leasing pending purges', (db) =>
        db
          .update(t)
          .set({ leaseOwner: owner, leaseUntil: until })
          .where(and(inArray(t.eventId, candidates), dueAndFree)),
      );
      const rows = await adapter.run('reading leased purges', (db) =>
        db
          .select()
          .from(t)
          .where(and(inArray(t.eventId, candidates), eq(t.leaseOwner, owner))),
      );
      return rows.map(toEntry).sort(byDue);
    },

    async recordFailure(eventId, nextAttemptAt, errorCode) {
      await adapter.run('recording a failed purge attempt', (db) =>
        db
          .update(t)
          .set({
            attempts: sql`${t.attempts} + 1`,
            nextAttemptAt,
            lastError: errorCode.slice(0, 64),
            leaseOwner: null,
            leaseUntil: null,
          })
          .where(eq(t.eventId, eventId)),
      );
    },

    async complete(eventId, sweepAt) {
      await adapter.run('completing a pending purge', (db) =>
        sweepAt === undefined
          ? db.delete(t).where(eq(t.eventId, eventId))
          : db
              .update(t)
              .set({
                kind: 'sweep',
                attempts: 0,
                nextAttemptAt: sweepAt,
                lastError: null,
                leaseOwner: null,
                leaseUntil: null,
              })
              .where(eq(t.eventId, eventId)),
      );
    },
  };
}
