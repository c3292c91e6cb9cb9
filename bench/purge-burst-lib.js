// The purge-burst measurement (issue 22 §5), reusable by other suites: a
// burst of N `app.uninstalled` events sent by the local platform at once to
// one or more kit instances on one database, timed until every delivery is
// acknowledged (2xx) and every purge is done (its outbox entry is a sweep or
// gone; each purge awaits its scrub: VACUUM / WAL checkpoint / OPTIMIZE).
//
//   const burst = await setupPurgeBurst({ databaseUrl, stores: 2000, n: 1000 });
//   const figures = await burst.run();   // { seconds, acknowledged, purged, ... }
//   await burst.close();
//
// Or, with kits and a platform of your own: uninstallBurst({ platform, clientId, storeIds, kit }).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { int as myInt, mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';
import { generateKey } from '../dist/crypto/index.js';
import { storeApp } from '../dist/index.js';
import { startPlatform } from '../dist/platform/index.js';
import { issueTokens, listen } from './lib.js';

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

const dialectOf = (url) =>
  /^postgres(ql)?:/.test(url) ? 'postgres' : /^(mysql|mariadb):/.test(url) ? 'mysql' : 'sqlite';

async function exec(kit, query) {
  return kit.dialect === 'sqlite' ? kit.db.run(query) : kit.db.execute(query);
}

/** A round-robin proxy: the one webhook URL the platform knows, in front of every instance. */
async function roundRobin(urls) {
  let next = 0;
  const server = http.createServer((req, res) => {
    const target = new URL(urls[next++ % urls.length]);
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/**
 * Uninstalls `storeIds` on `platform` at once and waits until every delivery
 * is acknowledged and no purge is pending on `kit` (sweeps are not pending
 * purges). Returns { seconds, acknowledged, failedAttempts, pending }.
 */
export async function uninstallBurst({ platform, clientId, storeIds, kit, timeoutMs = 600_000 }) {
  const ids = new Set(storeIds);
  const started = performance.now();
  for (const storeId of storeIds) platform.uninstall({ storeId, clientId });
  const deadline = Date.now() + timeoutMs;
  let pending = Number.POSITIVE_INFINITY;
  let acknowledged = 0;
  let failedAttempts = 0;
  for (;;) {
    const deliveries = platform.deliveries().filter((d) => ids.has(d.storeId));
    acknowledged = deliveries.filter((d) => d.status === 'succeeded').length;
    failedAttempts = deliveries
      .flatMap((d) => d.attempts)
      .filter((a) => !(a.status >= 200 && a.status < 300)).length;
    if (acknowledged === ids.size) {
      pending = (await kit.pendingPurges()).filter((p) => ids.has(p.storeId)).length;
      if (pending === 0) break;
    }
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  return {
    seconds: (performance.now() - started) / 1000,
    acknowledged,
    failedAttempts,
    pending: Number.isFinite(pending) ? pending : ids.size,
  };
}

/**
 * A local platform, `instances` kit processes' worth of kits (in this
 * process) on `databaseUrl`, `stores` installed stores with `rowsPerStore`
 * app rows each; `run()` uninstalls `n` of them at once (uninstallBurst) and
 * checks their rows are gone.
 */
export async function setupPurgeBurst({
  databaseUrl,
  stores = 2000,
  n = 1000,
  rowsPerStore = 5,
  instances = 1,
}) {
  const dialect = dialectOf(databaseUrl);
  const notes = NOTES[dialect]();
  // The platform's default retry schedule (5 s, 30 s, 120 s, …): a delivery
  // that fails once costs the burst at least 5 s, as in production.
  const platform = await startPlatform({
    logger: false,
    rateLimit: { concurrent: 10_000, perMinute: 1_000_000 },
  });
  const encryptionKey = generateKey();
  const kits = [];
  const servers = [];
  const proxyTargets = [];
  const proxy = await roundRobin(proxyTargets);
  const app = platform.registerApp({
    name: 'Purge burst',
    redirectUri: `${proxy.url}/auth/callback`,
    webhookUrl: `${proxy.url}/webhooks`,
    scopes: ['read_products'],
    appUrl: proxy.url,
  });
  for (let i = 0; i < instances; i++) {
    const kit = await storeApp({
      appUrl: proxy.url,
      environment: 'test',
      oauth: {
        clientId: app.clientId,
        clientSecret: app.clientSecret,
        scopes: ['read_products'],
        authUrl: platform.authUrl,
      },
      storage: { databaseUrl, encryptionKeys: [encryptionKey] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: app.webhookSecret },
      refresh: { sweepIntervalMs: 0 },
      logger: { level: 'silent' },
      storeScopedTables: [notes],
    });
    if (i === 0) {
      await exec(kit, sql.raw('DROP TABLE IF EXISTS burst_notes'));
      await exec(
        kit,
        sql.raw(
          dialect === 'mysql'
            ? 'CREATE TABLE burst_notes (store_id VARCHAR(255) NOT NULL, n INTEGER NOT NULL, KEY burst_notes_store (store_id))'
            : 'CREATE TABLE burst_notes (store_id TEXT NOT NULL, n INTEGER NOT NULL)',
        ),
      );
      if (dialect !== 'mysql') {
        await exec(kit, sql.raw('CREATE INDEX burst_notes_store ON burst_notes (store_id)'));
      }
    }
    const web = express();
    web.use(kit.middleware());
    const { server, url } = await listen(web);
    kits.push(kit);
    servers.push(server);
    proxyTargets.push(url);
  }
  const kit = kits[0];

  // The uninstalled stores are installed through the platform (it only sends
  // app.uninstalled for an installed app); the others only need a row.
  const burstIds = [];
  for (let i = 0; i < stores; i++) {
    const { storeId } = platform.createStore({ seed: 0 });
    const uninstalled = i < n;
    const t = uninstalled
      ? await issueTokens(platform, {
          app,
          storeId,
          redirectUri: `${proxy.url}/auth/callback`,
          scopes: ['read_products'],
        })
      : {
          scope: 'read_products',
          access_token: `at_${storeId}`,
          refresh_token: null,
          expires_in: 86_400,
        };
    await kit.storage.installations.upsert(storeId, {
      scopes: t.scope.split(/[ ,]/),
      accessToken: t.access_token,
      refreshToken: t.refresh_token,
      accessTokenExpiresAt: new Date(Date.now() + t.expires_in * 1000),
    });
    if (uninstalled) burstIds.push(storeId);
  }
  await kit.storage.transaction(async (tx) => {
    const all = (await kit.storage.installations.list()).map((x) => x.storeId);
    for (let i = 0; i < all.length; i += 100) {
      const chunk = all
        .slice(i, i + 100)
        .flatMap((storeId) => Array.from({ length: rowsPerStore }, (_, k) => ({ storeId, n: k })));
      if (chunk.length > 0) await tx.insert(notes).values(chunk);
    }
  });

  const countRows = async (ids) => {
    let left = 0;
    for (let i = 0; i < ids.length; i += 200) {
      const list = sql.join(
        ids.slice(i, i + 200).map((id) => sql`${id}`),
        sql`, `,
      );
      const q = sql`SELECT count(*) AS n FROM burst_notes WHERE store_id IN (${list})`;
      const r =
        dialect === 'sqlite'
          ? kit.db.all(q)
          : dialect === 'postgres'
            ? (await kit.db.execute(q)).rows
            : (await kit.db.execute(q))[0];
      left += Number(Object.values(r[0])[0]);
    }
    return left;
  };

  return {
    kits,
    platform,
    app,
    storeIds: burstIds,
    async run() {
      const figures = await uninstallBurst({
        platform,
        clientId: app.clientId,
        storeIds: burstIds,
        kit,
      });
      const installationsLeft = (
        await Promise.all(burstIds.map((id) => kit.storage.installations.get(id)))
      ).filter(Boolean).length;
      return { ...figures, rowsLeft: await countRows(burstIds), installationsLeft };
    },
    async close() {
      for (const k of kits) await k.close();
      for (const s of servers) {
        s.closeAllConnections?.();
        s.close();
      }
      proxy.server.closeAllConnections?.();
      proxy.server.close();
      await platform.close();
    },
  };
}
