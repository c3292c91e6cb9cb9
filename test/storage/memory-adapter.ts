/**
 * An in-memory StorageAdapter written only against the public interface
 * (`store-app-kit/storage`): the proof that the interface is enough, and the
 * long form of the example in docs/storage.md. Several adapter instances on
 * one MemoryDatabase stand in for several processes on one database.
 * Not for production: nothing survives a restart, nothing is shared between
 * real processes.
 */
import {
  type PendingPurgeRecord,
  type SessionRecord,
  type StorageAdapter,
  StorageError,
  type StoredInstallation,
} from 'store-app-kit/storage';

/** The transaction handle this adapter hands to effects: writes that undo on rollback. */
export interface MemoryTx {
  write(apply: () => void, undo: () => void): void;
}

interface Lease {
  owner: string;
  until: number;
}

export interface MemoryDatabase {
  installations: Map<string, StoredInstallation & { lease: Lease | null }>;
  claims: Map<string, number>;
  deliveries: Map<string, number>;
  outbox: Map<string, PendingPurgeRecord & { lease: Lease | null }>;
  sessions: Map<string, SessionRecord>;
  audit: Array<{ storeId: string; purgedAt: number; eventAt: number | null }>;
  /** Serialises transactions (runOnce, purge) across every instance. */
  tail: Promise<unknown>;
}

export function createMemoryDatabase(): MemoryDatabase {
  return {
    installations: new Map(),
    claims: new Map(),
    deliveries: new Map(),
    outbox: new Map(),
    sessions: new Map(),
    audit: [],
    tail: Promise.resolve(),
  };
}

const copy = <T>(value: T): T => structuredClone(value);

export function openMemoryAdapter(db: MemoryDatabase): StorageAdapter<MemoryTx> {
  let closed = false;
  const open = () => {
    if (closed) throw new StorageError('memory adapter is closed');
  };
  /** Runs `fn` alone (one transaction at a time), undoing its writes if it throws. */
  function transaction<T>(fn: (tx: MemoryTx) => Promise<T>): Promise<T> {
    const result = db.tail.then(async () => {
      open();
      const undo: Array<() => void> = [];
      const tx: MemoryTx = {
        write(apply, revert) {
          apply();
          undo.push(revert);
        },
      };
      try {
        return await fn(tx);
      } catch (err) {
        for (const revert of undo.reverse()) revert();
        throw err;
      }
    });
    db.tail = result.catch(() => undefined);
    return result;
  }
  const row = (storeId: string) => db.installations.get(storeId);
  const view = (r: StoredInstallation & { lease: Lease | null }): StoredInstallation => {
    const { lease: _lease, ...rest } = r;
    return copy(rest);
  };
  const addToOutbox = (
    tx: MemoryTx,
    entry: { eventId: string; storeId: string; eventAt: Date },
    now: Date,
  ) => {
    if (db.outbox.has(entry.eventId)) return;
    const record = {
      ...copy(entry),
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
      lastError: null,
      kind: 'purge' as const,
      lease: null,
    };
    tx.write(
      () => db.outbox.set(entry.eventId, record),
      () => db.outbox.delete(entry.eventId),
    );
  };
  const direct: MemoryTx = { write: (apply) => apply() };
  const byDue = (x: PendingPurgeRecord, y: PendingPurgeRecord) =>
    +x.nextAttemptAt - +y.nextAttemptAt || (x.eventId < y.eventId ? -1 : 1);
  const record = (p: PendingPurgeRecord & { lease: Lease | null }): PendingPurgeRecord => {
    const { lease: _lease, ...rest } = p;
    return copy(rest);
  };

  return {
    name: 'memory',
    installations: {
      async get(storeId) {
        open();
        const r = row(storeId);
        return r ? view(r) : null;
      },
      async list() {
        open();
        return [...db.installations.values()].map(view);
      },
      async save(storeId, tokens, { platformInstalledAt, now }) {
        open();
        const previous = row(storeId);
        const next = {
          storeId,
          ...copy(tokens),
          installedAt: now,
          updatedAt: now,
          version: (previous?.version ?? 0) + 1,
          needsReauth: false,
          platformInstalledAt,
          lease: null,
        };
        db.installations.set(storeId, next);
        return view(next);
      },
      async listExpiringBefore(before, limit) {
        open();
        return [...db.installations.values()]
          .filter((r) => !r.needsReauth && r.accessTokenExpiresAt < before)
          .sort((x, y) => +x.accessTokenExpiresAt - +y.accessTokenExpiresAt)
          .slice(0, limit)
          .map((r) => r.storeId);
      },
      async markNeedsReauth(storeId, expectedVersion) {
        open();
        const r = row(storeId);
        if (!r || (expectedVersion !== undefined && r.version !== expectedVersion)) return false;
        r.needsReauth = true;
        r.lease = null;
        return true;
      },
    },
    refreshLease: {
      async acquire(storeId, expectedVersion, owner, until, now) {
        open();
        const r = row(storeId);
        if (!r || r.version !== expectedVersion) return false;
        if (r.lease && r.lease.owner !== owner && r.lease.until > +now) return false;
        r.lease = { owner, until: +until };
        return true;
      },
      async complete(storeId, owner, tokens, now) {
        open();
        const r = row(storeId);
        if (!r || r.lease?.owner !== owner) return null;
        Object.assign(r, copy(tokens), {
          updatedAt: now,
          version: r.version + 1,
          needsReauth: false,
          lease: null,
        });
        return view(r);
      },
      async release(storeId, owner) {
        open();
        const r = row(storeId);
        if (r?.lease?.owner === owner) r.lease = null;
      },
    },
    async claimOnce(namespace, id, expiresAt, now) {
      open();
      // The check and the write happen without an await between them: atomic in one event loop.
      const key = `${namespace}\n${id}`;
      const held = db.claims.get(key);
      if (held !== undefined && held > +now) return false;
      db.claims.set(key, +expiresAt);
      return true;
    },
    webhooks: {
      runOnce({ webhookId, receivedAt }, effects) {
        return transaction(async (tx) => {
          if (db.deliveries.has(webhookId)) return { duplicate: true } as const;
          tx.write(
            () => db.deliveries.set(webhookId, +receivedAt),
            () => db.deliveries.delete(webhookId),
          );
          const result = await effects({
            tx,
            addPendingPurge: async (entry) => addToOutbox(tx, entry, receivedAt),
          });
          return { duplicate: false, result } as const;
        });
      },
      async prune(before) {
        open();
        let n = 0;
        for (const [id, at] of db.deliveries) {
          if (at < +before && db.deliveries.delete(id)) n++;
        }
        return n;
      },
    },
    purgeOutbox: {
      async add(entry, now) {
        open();
        addToOutbox(direct, entry, now);
      },
      async due(now, limit) {
        open();
        return [...db.outbox.values()]
          .filter((p) => p.nextAttemptAt <= now)
          .sort(byDue)
          .slice(0, limit)
          .map(record);
      },
      async get(eventId) {
        open();
        const p = db.outbox.get(eventId);
        return p ? record(p) : null;
      },
      async lease(now, { owner, until, limit, eventId }) {
        open();
        // Synchronous from check to set: no other caller can interleave.
        const taken = [...db.outbox.values()]
          .filter(
            (p) =>
              (eventId === undefined
                ? p.nextAttemptAt <= now
                : p.eventId === eventId && (p.kind === 'purge' || p.lease?.owner === owner)) &&
              (p.lease === null || p.lease.until <= +now || p.lease.owner === owner),
          )
          .sort(byDue)
          .slice(0, limit);
        for (const p of taken) p.lease = { owner, until: +until };
        return taken.map(record);
      },
      async recordFailure(eventId, nextAttemptAt, errorCode) {
        open();
        const p = db.outbox.get(eventId);
        if (p) {
          Object.assign(p, {
            attempts: p.attempts + 1,
            nextAttemptAt,
            lastError: errorCode,
            lease: null,
          });
        }
      },
      async complete(eventId, sweepAt) {
        open();
        const p = db.outbox.get(eventId);
        if (!p) return;
        if (sweepAt === undefined) db.outbox.delete(eventId);
        else {
          Object.assign(p, {
            kind: 'sweep',
            attempts: 0,
            nextAttemptAt: sweepAt,
            lastError: null,
            lease: null,
          });
        }
      },
    },
    sessions: {
      async get(sid, now) {
        open();
        const s = db.sessions.get(sid);
        return s && s.expiresAt > now ? copy(s) : null;
      },
      async set(sid, record) {
        open();
        db.sessions.set(sid, copy(record));
      },
      async touch(sid, record) {
        open();
        const s = db.sessions.get(sid);
        if (s) Object.assign(s, { data: copy(record.data), expiresAt: record.expiresAt });
      },
      async destroy(sid) {
        open();
        db.sessions.delete(sid);
      },
      async prune(now) {
        open();
        let n = 0;
        for (const [sid, s] of db.sessions) {
          if (s.expiresAt <= now && db.sessions.delete(sid)) n++;
        }
        return n;
      },
    },
    purge(storeId, { ifInstalledBefore, sweep, effects, now, outbox }) {
      const started = performance.now();
      // The outbox entry settles with the purge (last, once nothing can throw).
      const settle = () => {
        const p = outbox && db.outbox.get(outbox.eventId);
        if (!outbox || !p) return;
        if (outbox.sweepAfterMs <= 0) db.outbox.delete(outbox.eventId);
        else {
          const due = +now + Math.ceil(performance.now() - started) + outbox.sweepAfterMs;
          Object.assign(p, {
            kind: 'sweep',
            attempts: 0,
            nextAttemptAt: new Date(due),
            lastError: null,
            lease: null,
          });
        }
      };
      return transaction(async (tx) => {
        const r = row(storeId);
        const installedAt = r ? (r.platformInstalledAt ?? r.installedAt) : undefined;
        if (sweep && r) return { purged: false, counts: {} };
        if (ifInstalledBefore) {
          const skip = installedAt
            ? installedAt > ifInstalledBefore
            : !sweep &&
              db.audit.some(
                (a) =>
                  a.storeId === storeId && a.eventAt !== null && a.eventAt >= +ifInstalledBefore,
              );
          if (skip) return { purged: false, counts: {} };
        }
        const counts: Record<string, number> = { ...((await effects?.(tx)) ?? {}) };
        // Saves are not serialised with purges: a reinstall may have landed during effects.
        const current = row(storeId);
        const newer =
          current !== undefined &&
          ifInstalledBefore !== undefined &&
          (current.platformInstalledAt ?? current.installedAt) > ifInstalledBefore;
        counts['store_app_installations'] =
          current && !newer && db.installations.delete(storeId) ? 1 : 0;
        let sessions = 0;
        for (const [sid, s] of db.sessions) {
          if (s.storeId === storeId && db.sessions.delete(sid)) sessions++;
        }
        counts['store_app_sessions'] = sessions;
        if (sweep && !Object.values(counts).some((n) => n > 0)) {
          settle();
          return { purged: true, counts };
        }
        db.audit.push({
          storeId,
          purgedAt: +now,
          eventAt: ifInstalledBefore ? +ifInstalledBefore : null,
        });
        settle();
        return { purged: true, counts };
      });
    },
    async migrate() {
      open();
    },
    async close() {
      closed = true;
    },
  };
}
