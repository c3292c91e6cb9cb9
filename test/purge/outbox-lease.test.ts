/**
 * Issue 22 §5: pending purges carry a lease, so two instances sharing one
 * outbox never work one purge twice. Two storages (two connections, as two
 * processes have) on one SQLite file, Postgres and MariaDB database, each with
 * its own outbox worker, work the same 60 pending purges at once.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createPurge, type PurgeFunction } from '../../src/purge/index.js';
import { createPurgeOutbox } from '../../src/purge/outbox.js';
import { createStorage } from '../../src/storage/index.js';
import type { Storage } from '../../src/storage/types.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase } from '../helpers/postgres.js';

const ENTRIES = 60;

async function shareOneOutbox(databaseUrl: string) {
  const key = generateKey();
  const storages: Storage[] = [];
  for (let i = 0; i < 2; i++) {
    storages.push(await createStorage({ databaseUrl, encryptionKeys: [key] }));
  }
  try {
    const calls = new Map<string, number>();
    const outboxes = storages.map((storage) => {
      const purge = createPurge({
        storage,
        options: { storeScopedTables: [], onPurge: undefined },
      });
      const counted: PurgeFunction = async (storeId, options) => {
        calls.set(storeId, (calls.get(storeId) ?? 0) + 1);
        // A purge that takes a moment, so the other instance's pass overlaps it.
        await new Promise((r) => setTimeout(r, 20));
        return purge(storeId, options);
      };
      return createPurgeOutbox({
        pendingPurges: storage.pendingPurges,
        purge: counted,
        batchSize: ENTRIES,
        concurrency: 8,
        sweepDelayMs: 0,
      });
    });
    const stores = Array.from({ length: ENTRIES }, () => `s-${randomUUID()}`);
    const eventAt = new Date(Date.now() - 1000);
    for (const storeId of stores) {
      await storages[0]!.pendingPurges.add({ eventId: `evt-${storeId}`, storeId, eventAt });
    }
    // Both instances poll at the same moment, again and again, until the outbox is empty.
    for (let pass = 0; pass < 20 && (await storages[0]!.pendingPurges.list()).length > 0; pass++) {
      await Promise.all(outboxes.map((o) => o.runDue()));
    }
    expect(await storages[1]!.pendingPurges.list()).toEqual([]);
    expect(stores.filter((s) => calls.get(s) !== 1)).toEqual([]);
    await Promise.all(outboxes.map((o) => o.close()));
  } finally {
    for (const s of storages) await s.close();
  }
}

describe('purge outbox lease: two instances on one database work each purge once', () => {
  it('SQLite file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sak-lease-'));
    try {
      await shareOneOutbox(`file:${join(dir, 'app.db')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('Postgres', async () => {
    const db = await createTempDatabase('sak_lease');
    try {
      await shareOneOutbox(db.url);
    } finally {
      await db.drop();
    }
  });

  it('MariaDB', async () => {
    const db = await createTempMysqlDatabase('sak_lease');
    try {
      await shareOneOutbox(db.url);
    } finally {
      await db.drop();
    }
  });
});
