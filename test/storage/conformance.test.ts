/**
 * The public conformance suite (`store-app-kit/testing`) on every storage the
 * kit ships or documents: the built-in SQLite file, Postgres and MariaDB adapters, and
 * the in-memory reference adapter written only against the public interface.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll } from 'vitest';
import { openBuiltinAdapter } from '../../src/storage/index.js';
import type { AnyDrizzle } from '../../src/storage/types.js';
import { defineStorageAdapterSuite } from '../../src/testing/adapter-suite.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { createMemoryDatabase, type MemoryTx, openMemoryAdapter } from './memory-adapter.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-conformance-'));
const sqliteUrl = `file:${join(dir, 'conformance.db')}`;
let pg: TempDatabase;
let maria: TempDatabase;
const PROBE_TABLE = sql.raw('CREATE TABLE app_probe (probe_key text NOT NULL)');
beforeAll(async () => {
  pg = await createTempDatabase('sak_conformance');
  // The app table the probe writes through the effects' transaction, made up front
  // (DDL inside a transaction that rolls back would vanish with it).
  const lite = await openBuiltinAdapter({ databaseUrl: sqliteUrl });
  lite.db.run(PROBE_TABLE);
  await lite.close();
  const postgres = await openBuiltinAdapter({ databaseUrl: pg.url, pool: { max: 1 } });
  await postgres.db.execute(PROBE_TABLE);
  await postgres.close();
  maria = await createTempMysqlDatabase('sak_conformance');
  const mysql = await openBuiltinAdapter({ databaseUrl: maria.url, pool: { max: 1 } });
  await mysql.db.execute(PROBE_TABLE);
  await mysql.close();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await pg?.drop();
  await maria?.drop();
});

/** Writes through the effects' Drizzle transaction into an app table, and counts what committed. */
function drizzleProbe(
  dialect: 'sqlite' | 'postgres' | 'mysql',
  open: () => Promise<{ db: AnyDrizzle; close(): Promise<void> }>,
) {
  return {
    async write(tx: AnyDrizzle, key: string) {
      const insert = sql`INSERT INTO app_probe (probe_key) VALUES (${key})`;
      if (dialect === 'sqlite') tx.run(insert);
      else await tx.execute(insert);
    },
    async count(key: string) {
      const handle = await open();
      try {
        const q = sql`SELECT count(*) AS n FROM app_probe WHERE probe_key = ${key}`;
        const rows =
          dialect === 'sqlite'
            ? handle.db.all(q)
            : dialect === 'mysql'
              ? (await handle.db.execute(q))[0]
              : (await handle.db.execute(q)).rows;
        return Number(rows[0].n);
      } finally {
        await handle.close();
      }
    },
  };
}

defineStorageAdapterSuite({
  name: 'built-in SQLite',
  open: () => openBuiltinAdapter({ databaseUrl: sqliteUrl }),
  txProbe: drizzleProbe('sqlite', () => openBuiltinAdapter({ databaseUrl: sqliteUrl })),
});

defineStorageAdapterSuite({
  name: 'built-in Postgres',
  open: () => openBuiltinAdapter({ databaseUrl: pg.url, pool: { max: 4 } }),
  txProbe: drizzleProbe('postgres', () =>
    openBuiltinAdapter({ databaseUrl: pg.url, pool: { max: 1 } }),
  ),
});

defineStorageAdapterSuite({
  name: 'built-in MariaDB',
  open: () => openBuiltinAdapter({ databaseUrl: maria.url, pool: { max: 4 } }),
  txProbe: drizzleProbe('mysql', () =>
    openBuiltinAdapter({ databaseUrl: maria.url, pool: { max: 1 } }),
  ),
});

const memory = createMemoryDatabase();
const probe: string[] = [];
defineStorageAdapterSuite<MemoryTx>({
  name: 'in-memory reference adapter',
  open: async () => openMemoryAdapter(memory),
  txProbe: {
    async write(tx, key) {
      tx.write(
        () => probe.push(key),
        () => probe.splice(probe.lastIndexOf(key), 1),
      );
    },
    async count(key) {
      return probe.filter((k) => k === key).length;
    },
  },
});
