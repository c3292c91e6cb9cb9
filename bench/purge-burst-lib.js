// The purge-burst measurement (issue 22 §5), reusable by other suites: a
// burst of N `app.uninstalled` events sent by the local platform at once to
// one or more kit instances on one database, timed until every delivery is
// acknowledged (2xx) and every purge is done (its outbox entry is a sweep or
// gone; each purge awaits its scrub: VACUUM / WAL checkpoint / OPTIMIZE).
// Each kit runs in its own process (bench/workers/purge-burst-kit.js), as in
// production: sharing the platform's event loop, the kit's answers would
// pass the platform's delivery timeout for the bench's sake, not the kit's.
//
//   const burst = await setupPurgeBurst({ databaseUrl, stores: 2000, n: 1000 });
//   const figures = await burst.run();   // { seconds, acknowledged, purged, ... }
//   await burst.close();
//
// Or, with kits and a platform of your own: uninstallBurst({ platform, clientId, storeIds, kit }).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { int as myInt, mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { internalsOf } from '../dist/compose/internals.js';
import { generateKey } from '../dist/crypto/index.js';
import { storeApp } from '../dist/index.js';
import { startPlatform } from '../dist/platform/index.js';
import { issueTokens } from './lib.js';

const KIT_WORKER = fileURLToPath(new URL('./workers/purge-burst-kit.js', import.meta.url));

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
 * purges). `kit` only needs `pendingPurges()`. Returns { seconds (all purged),
 * ackSeconds (all acknowledged), acknowledged, failedAttempts, failures (count by
 * status or error), pending }.
 */
export async function uninstallBurst({ platform, clientId, storeIds, kit, timeoutMs = 600_000 }) {
  const ids = new Set(storeIds);
  const started = performance.now();
  for (const storeId of storeIds) platform.uninstall({ storeId, clientId });
  const deadline = Date.now() + timeoutMs;
  let pending = Number.POSITIVE_INFINITY;
  let acknowledged = 0;
  let failedAttempts = 0;
  let failures = {};
  let ackSeconds;
  for (;;) {
    const deliveries = platform.deliveries().filter((d) => ids.has(d.storeId));
    acknowledged = deliveries.filter((d) => d.status === 'succeeded').length;
    const failed = deliveries
      .flatMap((d) => d.attempts)
      .filter((a) => !(a.status >= 200 && a.status < 300));
    failedAttempts = failed.length;
    failures = {};
    for (const a of failed) {
      const why = a.status === undefined ? (a.error ?? 'error') : `HTTP ${a.status}`;
      failures[why] = (failures[why] ?? 0) + 1;
    }
    if (acknowledged === ids.size) {
      ackSeconds ??= (performance.now() - started) / 1000;
      pending = (await kit.pendingPurges()).filter((p) => ids.has(p.storeId)).length;
      if (pending === 0) break;
    }
    if (Date.now() > deadline) break;
    await sleep(50);
  }
  return {
    seconds: (performance.now() - started) / 1000,
    ackSeconds: ackSeconds ?? Number.NaN,
    acknowledged,
    failedAttempts,
    failures,
    pending: Number.isFinite(pending) ? pending : ids.size,
  };
}

/** A free loopback port (the kit process listens on it; the platform must know it first). */
async function freePort() {
  const s = http.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Forks one kit process; resolves once it listens, with a request/answer channel over IPC. */
async function startKitProcess(settings, kitEntry) {
  const child = fork(KIT_WORKER, [], {
    env: {
      ...process.env,
      SAK_BURST_KIT: JSON.stringify(settings),
      ...(kitEntry ? { SAK_KIT_ENTRY: kitEntry } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map();
  let ids = 0;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      reject(new Error(`kit process exited (${code}) before listening`)),
    );
    child.on('message', (msg) => {
      if (msg.port !== undefined) resolve(msg.port);
      const w = waiting.get(msg.id);
      if (!w) return;
      waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(msg.error));
      else w.resolve(msg);
    });
  });
  const ask = (op, extra = {}) =>
    new Promise((resolve, reject) => {
      const id = ++ids;
      waiting.set(id, { resolve, reject });
      child.send({ id, op, ...extra });
    });
  return {
    url: `http://127.0.0.1:${port}`,
    ask,
    async close() {
      if (child.exitCode === null) await ask('close').catch(() => undefined);
      await exited;
    },
  };
}

/**
 * A local platform and `instances` kit processes on `databaseUrl`, `stores`
 * installed stores with `rowsPerStore` app rows each; `run()` uninstalls `n`
 * of them at once (uninstallBurst) and checks their rows are gone.
 * `kitEntry` points the kit processes at another build (a baseline).
 */
export async function setupPurgeBurst({
  databaseUrl,
  stores = 2000,
  n = 1000,
  rowsPerStore = 5,
  instances = 1,
  kitEntry,
}) {
  const dialect = dialectOf(databaseUrl);
  const notes = NOTES[dialect]();
  // The platform's default retry schedule (5 s, 30 s, 120 s, …): a delivery
  // that fails once costs the burst at least 5 s, as in production.
  const platform = await startPlatform({
    logger: false,
    rateLimit: { concurrent: 10_000, perMinute: 1_000_000 },
  });
  const ports = [];
  for (let i = 0; i < instances; i++) ports.push(await freePort());
  // One instance gets the deliveries directly; several share a round-robin proxy.
  const proxyTargets = ports.map((p) => `http://127.0.0.1:${p}`);
  const proxy = instances > 1 ? await roundRobin(proxyTargets) : undefined;
  const appUrl = proxy?.url ?? proxyTargets[0];
  const app = platform.registerApp({
    name: 'Purge burst',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
    appUrl,
  });
  const settings = {
    databaseUrl,
    appUrl,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    authUrl: platform.authUrl,
    webhookSecret: app.webhookSecret,
    encryptionKey: generateKey(),
    sessionSecret: randomBytes(32).toString('base64url'),
    // PURGE_BURST_LOG_LEVEL=info: the kit processes' logs on stdout (to find where time goes).
    logLevel: process.env.PURGE_BURST_LOG_LEVEL ?? 'silent',
  };

  // Seeding runs in this process on a kit of its own, closed before the burst
  // (its outbox would otherwise work purges as one more instance).
  const seeder = await storeApp({
    appUrl,
    environment: 'test',
    oauth: {
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      scopes: ['read_products'],
      authUrl: platform.authUrl,
    },
    storage: { databaseUrl, encryptionKeys: [settings.encryptionKey] },
    session: { secret: settings.sessionSecret },
    webhooks: { secrets: app.webhookSecret },
    refresh: { sweepIntervalMs: 0 },
    logger: { level: 'silent' },
    storeScopedTables: [notes],
  });
  // The kit's own storage (the kit object hands out no storage since issue 31).
  const storage = internalsOf(seeder).storage;
  const burstIds = [];
  try {
    await exec(seeder, sql.raw('DROP TABLE IF EXISTS burst_notes'));
    await exec(
      seeder,
      sql.raw(
        dialect === 'mysql'
          ? 'CREATE TABLE burst_notes (store_id VARCHAR(255) NOT NULL, n INTEGER NOT NULL, KEY burst_notes_store (store_id))'
          : 'CREATE TABLE burst_notes (store_id TEXT NOT NULL, n INTEGER NOT NULL)',
      ),
    );
    if (dialect !== 'mysql') {
      await exec(seeder, sql.raw('CREATE INDEX burst_notes_store ON burst_notes (store_id)'));
    }
    // The uninstalled stores are installed through the platform (it only sends
    // app.uninstalled for an installed app); the others only need a row.
    for (let i = 0; i < stores; i++) {
      const { storeId } = platform.createStore({ seed: 0 });
      const uninstalled = i < n;
      const t = uninstalled
        ? await issueTokens(platform, {
            app,
            storeId,
            redirectUri: `${appUrl}/auth/callback`,
            scopes: ['read_products'],
          })
        : {
            scope: 'read_products',
            access_token: `at_${storeId}`,
            refresh_token: null,
            expires_in: 86_400,
          };
      await storage.installations.upsert(storeId, {
        scopes: t.scope.split(/[ ,]/),
        accessToken: t.access_token,
        refreshToken: t.refresh_token,
        accessTokenExpiresAt: new Date(Date.now() + t.expires_in * 1000),
      });
      if (uninstalled) burstIds.push(storeId);
    }
    await storage.transaction(async (tx) => {
      const all = (await storage.installations.list()).map((x) => x.storeId);
      for (let i = 0; i < all.length; i += 100) {
        const chunk = all
          .slice(i, i + 100)
          .flatMap((storeId) =>
            Array.from({ length: rowsPerStore }, (_, k) => ({ storeId, n: k })),
          );
        if (chunk.length > 0) await tx.insert(notes).values(chunk);
      }
    });
  } finally {
    await seeder.close();
  }

  const kits = [];
  try {
    for (const port of ports) {
      kits.push(await startKitProcess({ ...settings, port }, kitEntry));
    }
  } catch (err) {
    for (const k of kits) await k.close();
    await platform.close();
    throw err;
  }
  const kit = kits[0];
  await kit.ask('watch', { storeIds: burstIds });

  return {
    kits,
    platform,
    app,
    storeIds: burstIds,
    async run() {
      const figures = await uninstallBurst({
        platform,
        clientId: app.clientId,
        storeIds: [...burstIds],
        kit: {
          async pendingPurges() {
            const { pending } = await kit.ask('pending');
            return burstIds.slice(0, pending).map((storeId) => ({ storeId }));
          },
        },
      });
      const { rowsLeft, installationsLeft } = await kit.ask('left');
      return { ...figures, rowsLeft, installationsLeft };
    },
    async close() {
      for (const k of kits) await k.close();
      if (proxy) {
        proxy.server.closeAllConnections?.();
        proxy.server.close();
      }
      await platform.close();
    },
  };
}
