// The sweep's batch (issue 33): claimDueForRefresh leases a page of due rows in
// one statement and grouped completeRefresh writes land together, on SQLite and
// Postgres. Real databases: concurrent claims must get disjoint rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import type { Storage } from '../../src/storage/types.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';

const keys = [generateKey()];
let database: TempDatabase;
let dir: string;
beforeAll(async () => {
  database = await createTempDatabase('sak_claim');
  dir = mkdtempSync(join(tmpdir(), 'sak-claim-'));
});
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const dialects: Array<[string, () => Promise<Storage>]> = [
  ['sqlite', () => createStorage({ databaseUrl: join(dir, 'a.db'), encryptionKeys: keys })],
  ['postgres', () => createStorage({ databaseUrl: database.url, encryptionKeys: keys })],
];

describe.each(dialects)('claiming due installations on %s', (_name, open) => {
  it('leases disjoint pages to concurrent claimers, skips excluded and flagged rows, and writes grouped', async () => {
    const storage = await open();
    try {
      const { installations } = storage;
      const claim = installations.claimDueForRefresh?.bind(installations);
      expect(claim).toBeTypeOf('function');
      if (!claim) return;
      const soon = new Date(Date.now() + 60_000);
      const ids = Array.from({ length: 40 }, (_, i) => `claim-${i.toString().padStart(2, '0')}`);
      for (const id of ids) {
        await installations.upsert(id, {
          accessToken: `at-${id}`,
          refreshToken: `rt-${id}`,
          scopes: ['read_products'],
          accessTokenExpiresAt: soon,
        });
      }
      await installations.markNeedsReauth('claim-00');
      const before = new Date(Date.now() + 300_000);
      const [a, b] = await Promise.all([
        claim(before, 15, 'owner-a', 30_000, ['claim-01']),
        claim(before, 15, 'owner-b', 30_000, ['claim-01']),
      ]);
      const got = [...a, ...b].map((i) => i.storeId);
      expect(got).toHaveLength(30);
      expect(new Set(got).size).toBe(30);
      expect(got).not.toContain('claim-00');
      expect(got).not.toContain('claim-01');
      // Decrypted as get() returns them.
      expect(a[0]?.refreshToken).toBe(`rt-${a[0]?.storeId}`);
      // Leased: the rest only (37 due and unflagged, 30 leased; claim-01 is no longer excluded).
      const rest = await claim(before, 100, 'owner-c', 30_000, []);
      expect(rest.map((i) => i.storeId).sort()).toEqual(
        ids.filter((id) => id !== 'claim-00' && !got.includes(id)).sort(),
      );
      // Writes that land together: each under its own lease; a wrong owner writes nothing.
      const later = new Date(Date.now() + 86_400_000);
      const written = await Promise.all(
        a.map((inst, i) =>
          installations.completeRefresh(inst.storeId, i === 0 ? 'owner-b' : 'owner-a', {
            accessToken: `at2-${inst.storeId}`,
            refreshToken: `rt2-${inst.storeId}`,
            scopes: ['read_products'],
            accessTokenExpiresAt: later,
          }),
        ),
      );
      expect(written[0]).toBeNull();
      for (const inst of written.slice(1)) {
        expect(inst?.version).toBe(2);
        const row = await installations.get(inst!.storeId);
        expect(row?.refreshToken).toBe(`rt2-${inst!.storeId}`);
        expect(row?.version).toBe(2);
        expect(row?.accessTokenExpiresAt.getTime()).toBe(later.getTime());
        expect(inst?.installedAt.getTime()).toBe(row?.installedAt.getTime());
      }
      expect((await installations.get(a[0]!.storeId))?.version).toBe(1);
    } finally {
      await storage.close();
    }
  });
});
