// Purge of one store holding 100,000 app rows over 3 app tables (plus the kit's
// rows), against the bare DELETE statements on an identical database, measured
// in the same run. Target (issue 5): under 2 s on SQLite. Since issue 11 the
// kit's purge also scrubs (SQLite: secure_delete + WAL checkpoint TRUNCATE;
// Postgres: VACUUM of the touched tables); the bare scrubbed rounds measure
// what that costs on its own.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import pg from 'pg';
import { createStorage } from '../../dist/storage/index.js';
import { median, report } from '../lib.js';

const ROWS = 100_000;
const OTHER_ROWS = 30_000;
const ROUNDS = 3;
const PG_ROUNDS = 4;
const TABLES = ['app_orders', 'app_notes', 'app_events'];
const key = randomBytes(32).toString('base64url');
const dir = mkdtempSync(join(tmpdir(), 'sak-bench-storage-'));
const appTables = TABLES.map((name) =>
  sqliteTable(name, {
    id: integer('id').primaryKey(),
    storeId: text('store_id').notNull(),
    body: text('body'),
  }),
);

function seed(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  for (const name of TABLES) {
    db.exec(
      `create table if not exists ${name} (id integer primary key, store_id text not null, body text)`,
    );
    db.exec(`create index if not exists ${name}_store_id on ${name} (store_id)`);
  }
  const fill = db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      db.prepare(`insert into ${TABLES[i % 3]} (store_id, body) values (?, ?)`).run(
        'store-gone',
        `row ${i}`,
      );
    }
    for (let i = 0; i < OTHER_ROWS; i++) {
      db.prepare(`insert into ${TABLES[i % 3]} (store_id, body) values (?, ?)`).run(
        'store-kept',
        `row ${i}`,
      );
    }
  });
  fill();
  db.close();
}

async function kitRound(i) {
  const file = join(dir, `kit-${i}.db`);
  const storage = await createStorage({ databaseUrl: file, encryptionKeys: [key] });
  seed(file);
  await storage.installations.upsert('store-gone', {
    scopes: ['read_products'],
    accessToken: 'at',
    refreshToken: 'rt',
    accessTokenExpiresAt: new Date(Date.now() + 60_000),
  });
  const t0 = performance.now();
  const result = await storage.purge('store-gone', { tables: appTables });
  const ms = performance.now() - t0;
  const deleted = TABLES.reduce((n, t) => n + result.counts[t], 0);
  if (deleted !== ROWS) throw new Error(`purge deleted ${deleted} app rows, expected ${ROWS}`);
  await storage.close();
  return ms;
}

function bareRound(i, scrub) {
  const file = join(dir, `bare-${scrub ? 'scrub-' : ''}${i}.db`);
  seed(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  if (scrub) db.pragma('secure_delete = ON');
  const t0 = performance.now();
  db.transaction(() => {
    for (const name of TABLES)
      db.prepare(`delete from ${name} where store_id = ?`).run('store-gone');
  })();
  if (scrub) db.pragma('wal_checkpoint(TRUNCATE)');
  const ms = performance.now() - t0;
  db.close();
  return ms;
}

const kit = [];
const bare = [];
const bareScrubbed = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    kit.push(await kitRound(i));
    bare.push(bareRound(i, false));
    bareScrubbed.push(bareRound(i, true));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
report('storage purge, SQLite, 100k app rows over 3 tables (ms)', {
  kit_median: median(kit),
  bare_deletes_median: median(bare),
  bare_deletes_scrubbed_median: median(bareScrubbed),
  ratio: median(kit) / median(bare),
  scrub_cost_ratio: median(bareScrubbed) / median(bare),
  target_ms: 2000,
});

// Postgres, when the server of this machine is reachable (skipped with a note otherwise).
const PG_ADMIN = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const pgTables = TABLES.map((name) =>
  pgTable(name, {
    id: pgInteger('id').primaryKey(),
    storeId: pgText('store_id').notNull(),
    body: pgText('body'),
  }),
);

async function pgSeed(client) {
  for (const [i, name] of TABLES.entries()) {
    await client.query(`drop table if exists ${name}`);
    await client.query(
      `create table ${name} (id integer primary key, store_id text not null, body text)`,
    );
    await client.query(`create index ${name}_store_id on ${name} (store_id)`);
    // Rows i, i+3, i+6, … of 0..ROWS-1 go to this table: 100,000 in all for the store.
    await client.query(
      `insert into ${name} select g, 'store-gone', 'row ' || g from generate_series($1::int, $2::int - 1, 3) g`,
      [i, ROWS],
    );
    await client.query(
      `insert into ${name} select g, 'store-kept', 'row ' || g from generate_series($1::int, $2::int - 1, 3) g`,
      [ROWS + i, ROWS + OTHER_ROWS],
    );
    await client.query(`analyze ${name}`);
  }
}

async function pgBench() {
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  try {
    await admin.connect();
  } catch {
    console.log(`storage purge, Postgres: skipped (${PG_ADMIN} unreachable)`);
    return;
  }
  const name = `sak_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database "${name}"`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  const kitTimes = [];
  const bareTimes = [];
  const vacuumTimes = [];
  try {
    const storage = await createStorage({ databaseUrl: url.toString(), encryptionKeys: [key] });
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    const kitRun = async () => {
      await pgSeed(client);
      await storage.installations.upsert('store-gone', {
        scopes: [],
        accessToken: 'at',
        refreshToken: null,
        accessTokenExpiresAt: new Date(Date.now() + 60_000),
      });
      const t0 = performance.now();
      const result = await storage.purge('store-gone', { tables: pgTables });
      kitTimes.push(performance.now() - t0);
      const deleted = TABLES.reduce((n, t) => n + result.counts[t], 0);
      if (deleted !== ROWS) throw new Error(`purge deleted ${deleted} app rows, expected ${ROWS}`);
    };
    const bareRun = async () => {
      await pgSeed(client);
      const t0 = performance.now();
      await client.query('begin');
      for (const t of TABLES) {
        await client.query(`delete from ${t} where store_id = $1`, ['store-gone']);
      }
      await client.query('commit');
      bareTimes.push(performance.now() - t0);
      // What the kit's scrub step costs on its own: VACUUM of the touched tables.
      const v0 = performance.now();
      await client.query(`vacuum ${TABLES.join(', ')}`);
      vacuumTimes.push(performance.now() - v0);
    };
    // Alternate which side goes first so warm-up and autovacuum hit both alike.
    for (let i = 0; i < PG_ROUNDS; i++) {
      if (i % 2) {
        await bareRun();
        await kitRun();
      } else {
        await kitRun();
        await bareRun();
      }
    }
    await client.end();
    await storage.close();
  } finally {
    await admin.query(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
  report('storage purge, Postgres, 100k app rows over 3 tables (ms)', {
    kit_median: median(kitTimes),
    bare_deletes_median: median(bareTimes),
    bare_vacuum_median: median(vacuumTimes),
    ratio: median(kitTimes) / median(bareTimes),
    ratio_vs_bare_deletes_plus_vacuum: median(kitTimes) / (median(bareTimes) + median(vacuumTimes)),
  });
}

await pgBench();
