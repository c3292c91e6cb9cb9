import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { SERVERS } from '../helpers/databases.js';
import type { TempDatabase } from '../helpers/postgres.js';

const run = promisify(execFile);
const TSX = resolve('node_modules/.bin/tsx');
const WORKER = resolve('test/storage/fixtures/worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'sak-multi-'));
const databases: TempDatabase[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const d of databases) await d.drop();
});

async function race(databaseUrl: string) {
  const key = generateKey();
  const storage = await createStorage({ databaseUrl, encryptionKeys: [key] });
  const ddl = sql.raw('create table app_effects (webhook_id text not null, owner text not null)');
  if (storage.dialect === 'sqlite') storage.db.run(ddl);
  else await storage.db.execute(ddl);
  await storage.installations.upsert('store-lease', {
    scopes: [],
    accessToken: 'at',
    refreshToken: 'rt',
    accessTokenExpiresAt: new Date(Date.now() + 60_000),
  });
  const ids = Array.from({ length: 15 }, (_, i) => `msg_${i}`).join(',');
  const outputs = await Promise.all(
    ['p1', 'p2', 'p3'].map((owner) =>
      run(TSX, [WORKER, databaseUrl, key, ids, owner], { timeout: 60_000 }),
    ),
  );
  const results = outputs.map(
    (o) => JSON.parse(o.stdout) as { ran: number; claimed: number; lease: boolean },
  );
  const count = sql`select count(*) as n, count(distinct webhook_id) as d from app_effects`;
  const rows =
    storage.dialect === 'sqlite'
      ? storage.db.all(count)
      : storage.dialect === 'mysql'
        ? (await storage.db.execute(count))[0]
        : (await storage.db.execute(count)).rows;
  await storage.close();
  return { results, total: Number(rows[0].n), distinct: Number(rows[0].d) };
}

describe('several processes on one database', () => {
  it.each(['sqlite', ...SERVERS.map((s) => s.dialect)])(
    '%s: each webhook id runs once in all, each id is claimed once, and one process wins the lease',
    async (dialect) => {
      let url = join(dir, 'shared.db');
      const server = SERVERS.find((s) => s.dialect === dialect);
      if (server) {
        const d = await server.create('sak_multi');
        databases.push(d);
        url = d.url;
      }
      const { results, total, distinct } = await race(url);
      expect(total).toBe(15);
      expect(distinct).toBe(15);
      expect(results.reduce((n, r) => n + r.ran, 0)).toBe(15);
      // Each id claimed by exactly one process (launch tokens are single-use across instances).
      expect(results.reduce((n, r) => n + r.claimed, 0)).toBe(15);
      expect(results.filter((r) => r.lease)).toHaveLength(1);
    },
  );
});
