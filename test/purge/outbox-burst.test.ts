/**
 * Issue 22 §5: a burst of uninstalls is cheap. A purge frees its slot once
 * its transaction committed, so the next purge runs while the first one's
 * clean-up (its scrub) is still going; deliveries that find every slot taken
 * are acknowledged once recorded and the outbox drains their entries in
 * batches (one lease statement per batch, not a lease and a poll per
 * delivery). Storage is a real SQLite file and the real Postgres.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createPurge, type PurgeFunction } from '../../src/purge/index.js';
import { createPurgeOutbox } from '../../src/purge/outbox.js';
import { createStorage } from '../../src/storage/index.js';
import type { PendingPurgeRepository, Storage } from '../../src/storage/types.js';
import { createTempDatabase } from '../helpers/postgres.js';

async function withStorage(
  databaseUrl: string,
  body: (storage: Storage) => Promise<void>,
): Promise<void> {
  const storage = await createStorage({ databaseUrl, encryptionKeys: [generateKey()] });
  try {
    await body(storage);
  } finally {
    await storage.close();
  }
}

async function addEntries(storage: Storage, n: number): Promise<string[]> {
  const eventAt = new Date(Date.now() - 1000);
  const events: string[] = [];
  for (let i = 0; i < n; i++) {
    const storeId = `s-${randomUUID()}`;
    await storage.pendingPurges.add({ eventId: `evt-${storeId}`, storeId, eventAt });
    events.push(`evt-${storeId}`);
  }
  return events;
}

/** One slot; the first purge's clean-up lasts until the second purge has committed. */
async function slotFreedAtCommit(storage: Storage): Promise<void> {
  const purge = createPurge({ storage, options: { storeScopedTables: [], onPurge: undefined } });
  const [first, second] = await addEntries(storage, 2);
  const committed: string[] = [];
  let openGate!: () => void;
  const gate = new Promise<void>((r) => {
    openGate = r;
  });
  const slowCleanUp: PurgeFunction = async (storeId, options) => {
    const result = await purge(storeId, {
      ...options,
      onCommitted: () => {
        committed.push(storeId);
        options?.onCommitted?.();
      },
    });
    // The clean-up after the commit (a long VACUUM): the first purge's takes until the gate opens.
    if (`evt-${storeId}` === first) await gate;
    return result;
  };
  const outbox = createPurgeOutbox({
    pendingPurges: storage.pendingPurges,
    purge: slowCleanUp,
    concurrency: 1,
    sweepDelayMs: 0,
  });
  try {
    const a = outbox.runNow(first!);
    await vi.waitFor(() => expect(committed).toHaveLength(1), { timeout: 5000 });
    // Every slot is taken by a purge that already committed: the second one
    // is acknowledged now and drained by the outbox's batch.
    expect(await outbox.runNow(second!)).toBe(true);
    await vi.waitFor(() => expect(committed).toHaveLength(2), { timeout: 5000 });
    openGate();
    expect(await a).toBe(true);
    await vi.waitFor(async () => expect(await storage.pendingPurges.list()).toEqual([]), {
      timeout: 5000,
    });
  } finally {
    openGate();
    await outbox.close();
  }
}

/** 40 deliveries of a burst arrive while every slot is taken. */
async function burstDrainsInBatches(storage: Storage): Promise<void> {
  const purge = createPurge({ storage, options: { storeScopedTables: [], onPurge: undefined } });
  const events = await addEntries(storage, 40);
  let leases = 0;
  let gets = 0;
  const counted: PendingPurgeRepository = {
    ...storage.pendingPurges,
    lease: (l) => {
      leases++;
      return storage.pendingPurges.lease(l);
    },
    get: (id) => {
      gets++;
      return storage.pendingPurges.get(id);
    },
  };
  const outbox = createPurgeOutbox({
    pendingPurges: counted,
    purge,
    concurrency: 2,
    batchSize: 50,
    sweepDelayMs: 0,
    // No renewals inside this test: every lease statement counted is a lease.
    leaseMs: 60_000,
  });
  try {
    const answers = await Promise.all(events.map((id) => outbox.runNow(id)));
    expect(answers.every(Boolean)).toBe(true);
    await vi.waitFor(async () => expect(await storage.pendingPurges.list()).toEqual([]), {
      timeout: 10_000,
    });
    // The first deliveries took the free slots; the others were left to the
    // batches: a handful of statements for 40 purges, not a lease (and a poll) each.
    expect(leases).toBeLessThanOrEqual(8);
    expect(gets).toBeLessThanOrEqual(4);
  } finally {
    await outbox.close();
  }
}

/** One slot: a delivery takes it, then finds its entry leased by this process's batch pass. */
async function deliveryMeetsBatch(storage: Storage): Promise<void> {
  const purge = createPurge({ storage, options: { storeScopedTables: [], onPurge: undefined } });
  const [event] = await addEntries(storage, 1);
  const outbox = createPurgeOutbox({
    pendingPurges: storage.pendingPurges,
    purge,
    concurrency: 1,
    sweepDelayMs: 0,
  });
  try {
    // The pass's lease statement goes first; the delivery's lease finds the entry taken.
    const pass = outbox.runDue();
    const delivery = outbox.runNow(event!);
    let settled = false;
    void Promise.all([pass, delivery]).then(() => {
      settled = true;
    });
    // The delivery must give its slot to the pass's attempt, not hold it while waiting for it.
    await vi.waitFor(() => expect(settled).toBe(true), { timeout: 5000 });
    expect(await delivery).toBe(true);
    expect(await storage.pendingPurges.list()).toEqual([]);
  } finally {
    await outbox.close();
  }
}

describe('purge outbox under a burst', () => {
  describe.each([
    ['SQLite file', 'sqlite'],
    ['Postgres', 'postgres'],
  ] as const)('%s', (_name, kind) => {
    async function onDatabase(body: (storage: Storage) => Promise<void>): Promise<void> {
      if (kind === 'sqlite') {
        const dir = mkdtempSync(join(tmpdir(), 'sak-burst-'));
        try {
          await withStorage(`file:${join(dir, 'app.db')}`, body);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        return;
      }
      const db = await createTempDatabase('sak_burst');
      try {
        await withStorage(db.url, body);
      } finally {
        await db.drop();
      }
    }

    it('a purge frees its slot at its commit: the next commits during its clean-up', () =>
      onDatabase(slotFreedAtCommit));

    it('deliveries finding every slot taken are drained in batches, not one lease each', () =>
      onDatabase(burstDrainsInBatches));

    it('a delivery whose entry the batch pass leased gives up its slot to it (no deadlock)', () =>
      onDatabase(deliveryMeetsBatch));
  });
});
