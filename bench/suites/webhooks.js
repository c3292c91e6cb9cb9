// Webhooks and purge (issue 5):
// 1. Uninstall purge of a store holding 100,000 app rows over 3 app tables
//    (indexed by store_id, plus 30,000 rows of a store that stays), timed from
//    one signed app.uninstalled delivery to its 200, on SQLite and Postgres;
//    baseline: the three bare DELETEs in one transaction on the same data.
// 2. Receiver throughput: signed deliveries with unique ids (verified,
//    recorded for dedupe, handler run) against a bare Express route answering
//    the same requests, and against a route that only reads the body and
//    records a fresh id (the cost of durable dedupe without verification),
//    interleaved rounds in the same run.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { pgTable, text as pgText, serial } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';
import pg from 'pg';
import { createPurge, resolvePurgeAppOptions } from '../../dist/purge/index.js';
import { SILENT } from '../../dist/shells/express/adapter.js';
import { expressHandler } from '../../dist/shells/express/handler.js';
import { createStorage } from '../../dist/storage/index.js';
import { createWebhooks, resolveWebhookOptions } from '../../dist/webhooks/index.js';
import { median, report } from '../lib.js';

const ROWS = 100_000;
const OTHER_ROWS = 30_000;
const PURGE_ROUNDS = 3;
const LOAD_ROUNDS = 3;
const LOAD_SECONDS = 2;
const CONCURRENCY = 16;
const TABLES = ['bench_notes', 'bench_orders', 'bench_events'];
const PG_ADMIN = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const key = randomBytes(32).toString('base64url');
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const dir = mkdtempSync(join(tmpdir(), 'sak-bench-webhooks-'));

const sqliteTables = TABLES.map((name) =>
  sqliteTable(name, {
    id: integer('id').primaryKey(),
    storeId: text('store_id').notNull(),
    body: text('body'),
  }),
);
const pgTables = TABLES.map((name) =>
  pgTable(name, {
    id: serial('id').primaryKey(),
    storeId: pgText('store_id').notNull(),
    body: pgText('body'),
  }),
);

function signed(payload, id = `msg_${randomUUID()}`) {
  const body = JSON.stringify(payload);
  const ts = Math.floor(Date.now() / 1000);
  const mac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${id}.${ts}.${body}`)
    .digest('base64');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,${mac}`,
    },
  };
}

const silent = { info() {}, warn() {}, error() {} };

async function listen(app) {
  const server = http.createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

function kitApp(storage, tables) {
  const purge = createPurge({
    storage,
    options: resolvePurgeAppOptions({ storeScopedTables: tables }, storage.dialect),
    logger: silent,
  });
  const hooks = createWebhooks({
    storage,
    options: resolveWebhookOptions({ secrets: [secret] }, {}),
    purge,
    logger: silent,
  });
  const app = express();
  // The receiver pipeline through the Express shell's adapter, as kit.middleware() runs it.
  app.all(hooks.path, expressHandler(hooks.handler, SILENT));
  return { app, hooks };
}

function post(agent, url, { body, headers }) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers, agent },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// --- 1. purge ---------------------------------------------------------------

const seedSql = {
  sqlite: (name, store, n, offset) =>
    `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) ` +
    `INSERT INTO ${name} (store_id, body) SELECT '${store}', 'row ' || (x + ${offset}) FROM c`,
  postgres: (name, store, n, offset) =>
    `INSERT INTO ${name} (store_id, body) SELECT '${store}', 'row ' || (g + ${offset}) FROM generate_series(1, ${n}) g`,
};

async function seed(storage) {
  const exec =
    storage.dialect === 'sqlite'
      ? async (s) => storage.db.run(sql.raw(s))
      : async (s) => storage.db.execute(sql.raw(s));
  const id = storage.dialect === 'sqlite' ? 'INTEGER PRIMARY KEY' : 'SERIAL PRIMARY KEY';
  for (const name of TABLES) {
    await exec(`DROP TABLE IF EXISTS ${name}`);
    await exec(`CREATE TABLE ${name} (id ${id}, store_id TEXT NOT NULL, body TEXT)`);
    await exec(`CREATE INDEX ${name}_store_id ON ${name} (store_id)`);
  }
  const per = Math.ceil(ROWS / 3);
  for (const [i, name] of TABLES.entries()) {
    const n = i < 2 ? per : ROWS - 2 * per;
    await exec(seedSql[storage.dialect](name, 'store-gone', n, 0));
    await exec(seedSql[storage.dialect](name, 'store-kept', OTHER_ROWS / 3, n));
  }
  await storage.installations.upsert('store-gone', {
    scopes: ['read_products'],
    accessToken: 'at',
    refreshToken: 'rt',
    accessTokenExpiresAt: new Date(Date.now() + 60_000),
  });
  if (storage.dialect === 'postgres') await exec('ANALYZE');
  return exec;
}

async function purgeRound(storage, tables) {
  await seed(storage);
  const { app } = kitApp(storage, tables);
  const { server, url } = await listen(app);
  const agent = new http.Agent({ keepAlive: true });
  try {
    const at = new Date(Date.now() + 1000).toISOString();
    const delivery = signed({
      type: 'app.uninstalled',
      timestamp: at,
      data: { store_id: 'store-gone', app_id: 'a', client_id: 'c', uninstalled_at: at },
    });
    const t0 = performance.now();
    const status = await post(agent, `${url}/webhooks`, delivery);
    const ms = performance.now() - t0;
    if (status !== 200) throw new Error(`uninstall delivery answered ${status}`);
    return ms;
  } finally {
    agent.destroy();
    server.close();
  }
}

async function bareRound(storage) {
  const exec = await seed(storage);
  const t0 = performance.now();
  if (storage.dialect === 'sqlite') {
    await storage.transaction(async (tx) => {
      for (const name of TABLES)
        tx.run(sql.raw(`DELETE FROM ${name} WHERE store_id = 'store-gone'`));
    });
  } else {
    await exec(
      `BEGIN; ${TABLES.map((n) => `DELETE FROM ${n} WHERE store_id = 'store-gone';`).join(' ')} COMMIT;`,
    );
  }
  return performance.now() - t0;
}

async function benchPurge(label, storage, tables) {
  const kit = [];
  const bare = [];
  for (let i = 0; i < PURGE_ROUNDS; i++) {
    kit.push(await purgeRound(storage, tables));
    bare.push(await bareRound(storage));
  }
  report(`uninstall purge, ${label}, 100k app rows over 3 tables (ms)`, {
    webhook_to_200_median: median(kit),
    bare_deletes_median: median(bare),
    ratio: median(kit) / median(bare),
    target_ms: 2000,
  });
}

async function withPostgres(fn) {
  const name = `sak_bench_wh_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  try {
    await admin.connect();
  } catch {
    console.log(
      `postgres: ${PG_ADMIN} unreachable; Postgres figures skipped (set TEST_POSTGRES_URL)`,
    );
    return;
  }
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  try {
    await fn(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

// --- 2. receiver throughput -----------------------------------------------

async function closedLoop(url, deliveries, seconds) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  let done = 0;
  let failures = 0;
  const end = performance.now() + seconds * 1000;
  async function loop() {
    while (performance.now() < end) {
      const d = deliveries[next++ % deliveries.length];
      const status = await post(agent, url, d);
      if (status === 200) done++;
      else failures++;
    }
  }
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  const rps = done / ((performance.now() - t0) / 1000);
  agent.destroy();
  return { rps, failures, used: next };
}

async function benchThroughput(storage) {
  const { app, hooks } = kitApp(storage, []);
  hooks.api.on('bench.event', () => {});
  app.post('/bare', (_req, res) => {
    res.json({ status: 'processed' });
  });
  // What any durable dedupe costs: read the body, record a fresh id, answer. No verification.
  app.post('/record-only', (req, res) => {
    req.resume();
    req.on('end', async () => {
      await storage.webhooks.runOnce(`bench_${randomUUID()}`, 'bench.event', async () => {});
      res.json({ status: 'processed' });
    });
  });
  const { server, url } = await listen(app);
  // Enough unique deliveries that none repeats: every one is verified and recorded.
  const pool = Array.from({ length: 60_000 }, (_, i) => signed({ type: 'bench.event', n: i }));
  let offset = 0;
  const kitRps = [];
  const bareRps = [];
  const commitRps = [];
  try {
    for (let r = 0; r < LOAD_ROUNDS; r++) {
      const k = await closedLoop(`${url}/webhooks`, pool.slice(offset), LOAD_SECONDS);
      offset += k.used;
      if (k.failures > 0) throw new Error(`${k.failures} deliveries were not answered 200`);
      kitRps.push(k.rps);
      bareRps.push((await closedLoop(`${url}/bare`, pool, LOAD_SECONDS)).rps);
      commitRps.push((await closedLoop(`${url}/record-only`, pool, LOAD_SECONDS)).rps);
    }
  } finally {
    server.close();
  }
  report(`webhook receiver throughput, ${storage.dialect}, unique signed deliveries (req/s)`, {
    receiver_median: median(kitRps),
    bare_express_median: median(bareRps),
    ratio: median(kitRps) / median(bareRps),
    read_and_record_median: median(commitRps),
    ratio_to_read_and_record: median(kitRps) / median(commitRps),
  });
}

try {
  const sqliteStorage = await createStorage({
    databaseUrl: `file:${join(dir, 'bench.db')}`,
    encryptionKeys: [key],
  });
  try {
    await benchPurge('SQLite', sqliteStorage, sqliteTables);
    await benchThroughput(sqliteStorage);
  } finally {
    await sqliteStorage.close();
  }
  await withPostgres(async (databaseUrl) => {
    const storage = await createStorage({ databaseUrl, encryptionKeys: [key] });
    try {
      await benchPurge('Postgres', storage, pgTables);
      await benchThroughput(storage);
    } finally {
      await storage.close();
    }
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
