// One kit process for the purge-burst bench (bench/purge-burst-lib.js): the
// kit runs alone on its event loop, as in production, so the platform's
// delivery timeouts measure the kit and not the bench's own load. Settings
// come as JSON in SAK_BURST_KIT; SAK_KIT_ENTRY points at another build of the
// package (a baseline). Talks to the parent over IPC:
//   → { port }                        once listening
//   ← { id, op: 'watch', storeIds }   the burst's stores (for the ops below)
//   ← { id, op: 'pending' }           → { id, pending }: purges not done among them
//   ← { id, op: 'left' }              → { id, rowsLeft, installationsLeft }
//   ← { id, op: 'close' }             → { id } after kit.close()
import { sql } from 'drizzle-orm';
import { int as myInt, mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';

const { storeApp } = await import(process.env.SAK_KIT_ENTRY ?? '../../dist/index.js');
const config = JSON.parse(process.env.SAK_BURST_KIT ?? '{}');

// The burst's store-scoped app table (bench/purge-burst-lib.js creates and seeds it).
const NOTES = {
  sqlite: () =>
    sqliteTable('burst_notes', { storeId: text('store_id').notNull(), n: integer('n').notNull() }),
  postgres: () =>
    pgTable('burst_notes', { storeId: pgText('store_id').notNull(), n: pgInteger('n').notNull() }),
  mysql: () =>
    mysqlTable('burst_notes', {
      storeId: varchar('store_id', { length: 255 }).notNull(),
      n: myInt('n').notNull(),
    }),
};

const dialect = /^postgres(ql)?:/.test(config.databaseUrl)
  ? 'postgres'
  : /^(mysql|mariadb):/.test(config.databaseUrl)
    ? 'mysql'
    : 'sqlite';
const notes = NOTES[dialect]();

const kit = await storeApp({
  appUrl: config.appUrl,
  environment: 'test',
  oauth: {
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    scopes: ['read_products'],
    authUrl: config.authUrl,
  },
  storage: { databaseUrl: config.databaseUrl, encryptionKeys: [config.encryptionKey] },
  session: { secret: config.sessionSecret },
  webhooks: { secrets: config.webhookSecret },
  refresh: { sweepIntervalMs: 0 },
  logger: { level: config.logLevel ?? 'silent' },
  storeScopedTables: [notes],
});

const web = express();
web.use(kit.middleware());
const server = web.listen(config.port ?? 0, '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});

let watched = new Set();

async function select(query) {
  return dialect === 'sqlite'
    ? kit.db.all(query)
    : dialect === 'postgres'
      ? (await kit.db.execute(query)).rows
      : (await kit.db.execute(query))[0];
}

/** `SELECT column FROM table WHERE store_id IN (watched)`, 200 ids a query. */
async function ofWatched(column, table) {
  const ids = [...watched];
  const out = [];
  for (let i = 0; i < ids.length; i += 200) {
    const list = sql.join(
      ids.slice(i, i + 200).map((id) => sql`${id}`),
      sql`, `,
    );
    out.push(
      ...(await select(
        sql`SELECT ${sql.raw(column)} AS v FROM ${sql.raw(table)} WHERE store_id IN (${list})`,
      )),
    );
  }
  return out.map((r) => r.v);
}

const installed = () => ofWatched('store_id', 'store_app_installations');

async function countLeft() {
  const rows = await ofWatched('store_id', 'burst_notes');
  return { rowsLeft: rows.length, installationsLeft: (await installed()).length };
}

process.on('message', async (msg) => {
  try {
    if (msg.op === 'watch') {
      watched = new Set(msg.storeIds);
      process.send({ id: msg.id });
    } else if (msg.op === 'pending') {
      // A store is done when its installation is gone and its outbox entry is
      // done (gone or a sweep: the purge's scrub ran before it completed). The
      // installation counts too: a delivery acknowledged with 202 before its
      // record committed has no outbox entry yet.
      const outbox = (await kit.pendingPurges()).filter((p) => watched.has(p.storeId));
      const waiting = new Set(outbox.map((p) => p.storeId));
      for (const storeId of await installed()) waiting.add(storeId);
      process.send({ id: msg.id, pending: waiting.size });
    } else if (msg.op === 'left') {
      process.send({ id: msg.id, ...(await countLeft()) });
    } else if (msg.op === 'close') {
      server.closeAllConnections?.();
      server.close();
      await kit.close();
      process.send({ id: msg.id }, () => process.exit(0));
    }
  } catch (err) {
    process.send({ id: msg.id, error: String(err?.message ?? err) });
  }
});
