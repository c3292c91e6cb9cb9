// Sustained load (issue 7, item 6): one kit app process (test/fixtures/app-instance.mjs,
// the built package) serves GET /api/first-product behind authenticated() — an
// app session token, the installation check, one platform API call — under a
// closed loop of keep-alive connections for LOAD_SECONDS (default 60; 10 with
// BENCH_QUICK=1), on a SQLite file and on Postgres. Prints throughput, p50/p99
// (per 5-second slice: median and worst), errors (target 0) and the app
// process's RSS and heap at start and end, sampled every slice after a GC
// (target flat). Baseline, measured in the same run on the same process: a
// route with no kit in its path (GET /test/ping).
// `npm run build`, then `node bench/suites/load.js`.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { generateKey } from '../../dist/crypto/index.js';
import { startPlatform } from '../../dist/platform/index.js';
import { load, median, report } from '../lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const appScript = join(here, '../../test/fixtures/app-instance.mjs');
const quick = process.env.BENCH_QUICK === '1';
const seconds = Number(process.env.LOAD_SECONDS ?? (quick ? 10 : 60));
const SLICE = 5;
const CONCURRENCY = 32;
const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function startApp(config) {
  const child = fork(appScript, [], {
    env: { ...process.env, SAK_APP_CONFIG: JSON.stringify(config) },
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`app exited with ${code}`)));
  });
}

function memory(child) {
  return new Promise((resolve) => {
    const onMessage = (m) => {
      if (m?.memory) {
        child.off('message', onMessage);
        resolve(m.memory);
      }
    };
    child.on('message', onMessage);
    child.send('memory');
  });
}

async function install(platform, appUrl, storeId) {
  const begun = await fetch(`${appUrl}/auth?store_id=${storeId}`, { redirect: 'manual' });
  const cookie = begun.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const callback = platform.approveInstall({
    authorizeUrl: begun.headers.get('location'),
    storeId,
  });
  const done = await fetch(callback, { redirect: 'manual', headers: { cookie } });
  if (done.status !== 302) throw new Error(`install answered ${done.status}`);
}

async function run(name, databaseUrl) {
  const platform = await startPlatform({ rateLimit: { perMinute: null, concurrent: 500 } });
  const port = await freePort();
  const appUrl = `http://127.0.0.1:${port}`;
  const creds = platform.registerApp({
    name: 'Load',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: ['read_products'],
  });
  const child = await startApp({
    databaseUrl,
    encryptionKey: generateKey(),
    sessionSecret: randomBytes(32).toString('base64url'),
    clientId: creds.clientId,
    clientSecret: creds.clientSecret,
    webhookSecret: creds.webhookSecret,
    authUrl: platform.authUrl,
    appUrl,
    port,
  });
  try {
    const { storeId } = platform.createStore({ seed: 5 });
    await install(platform, appUrl, storeId);
    const bearer = async () => {
      const r = await fetch(`${appUrl}/test/session-token/${storeId}`);
      return { authorization: `Bearer ${(await r.json()).token}` };
    };
    const url = `${appUrl}/api/first-product`;
    // Warm-up: JIT, pools, the installation cache.
    await load(url, { seconds: 2, concurrency: CONCURRENCY, headers: await bearer() });
    const base = await load(`${appUrl}/test/ping`, {
      seconds: Math.max(3, Math.round(seconds / 10)),
      concurrency: CONCURRENCY,
    });

    const start = await memory(child);
    const samples = [start];
    const slices = [];
    let left = seconds;
    while (left > 0) {
      const s = Math.min(SLICE, left);
      // A fresh session token per slice: the kit's tokens live 300 s.
      slices.push(
        await load(url, { seconds: s, concurrency: CONCURRENCY, headers: await bearer() }),
      );
      samples.push(await memory(child));
      left -= s;
    }
    const end = samples.at(-1);
    const requests = slices.reduce((n, r) => n + r.requests, 0);
    const non200 = slices.reduce(
      (n, r) =>
        n +
        Object.entries(r.statuses)
          .filter(([status]) => status !== '200')
          .reduce((m, [, c]) => m + c, 0),
      0,
    );
    const MB = 1024 * 1024;
    report(`load ${name}`, {
      seconds,
      concurrency: CONCURRENCY,
      requests,
      rps: requests / seconds,
      baseline_rps: base.rps,
      ratio_vs_baseline: requests / seconds / base.rps,
      p50_ms: median(slices.map((r) => r.p50)),
      p99_ms_median: median(slices.map((r) => r.p99)),
      p99_ms_worst: Math.max(...slices.map((r) => r.p99)),
      errors: slices.reduce((n, r) => n + r.errors, 0),
      non_200: non200,
      rss_mb_start: start.rss / MB,
      rss_mb_end: end.rss / MB,
      heap_mb_start: start.heapUsed / MB,
      heap_mb_end: end.heapUsed / MB,
      heap_mb_max: Math.max(...samples.map((m) => m.heapUsed)) / MB,
    });
    console.log(
      `  heap MB per ${SLICE}s slice: ${samples.map((m) => (m.heapUsed / MB).toFixed(1)).join(' ')}`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await platform.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'sak-bench-load-'));
try {
  await run('sqlite', join(dir, 'app.db'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const dbName = `sak_load_${Date.now().toString(36)}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`CREATE DATABASE "${dbName}"`);
try {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${dbName}`;
  await run('postgres', url.toString());
} finally {
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
}
