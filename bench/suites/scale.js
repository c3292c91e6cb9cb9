// Scale (issue 24): how an app instance behaves with N installed stores, for
// N = 1,000, 10,000 and 100,000, on a SQLite file and on Postgres.
//
// Seeding is fast, not N browser installs: the local platform's programmatic
// API creates each store and installs the app on 1,000 stores per transaction
// (`installMany`, real token pairs, no HTTP), and the tokens are sealed with
// the kit's cipher into the kit's installations table, 1,000 rows per
// transaction (see `seed`).
// Then, each in fresh processes on the shared database (bench/workers/scale-worker.js):
//   - start-up: storeApp() and its middleware with N installations stored;
//   - heap and RSS after a full GC, before and after every store made one API
//     call (kit.client(id).products.list({ limit: 1 }), 32 at a time);
//   - the time to refresh all N tokens when all are due at once, with the
//     kit's default refresh options, on one instance and on three (the lease
//     shares the work: refreshes must add up to N, lost leases are reported);
//   - the time to purge a burst of 1,000 stores (kit.purge, 16 at a time).
// Every figure has its ratio to the smallest N of the run.
//
// `npm run build`, then `node --expose-gc bench/suites/scale.js`
// (or `npm run bench -- scale`). SCALE_SIZES=1000,10000 picks the sizes
// (BENCH_QUICK=1: 1000 only, the CI size); SCALE_DIALECTS=sqlite picks the databases;
// SCALE_PHASES=memory leaves out the two refresh runs.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { createTokenCipher, generateKey } from '../../dist/crypto/index.js';
import { startPlatform } from '../../dist/platform/index.js';
import { createStorage } from '../../dist/storage/index.js';
import * as postgresSchema from '../../dist/storage/schema/postgres.js';
import * as sqliteSchema from '../../dist/storage/schema/sqlite.js';

const here = dirname(fileURLToPath(import.meta.url));
const workerScript = join(here, '..', 'workers', 'scale-worker.js');
const quick = process.env.BENCH_QUICK === '1';
const sizes = (process.env.SCALE_SIZES ?? (quick ? '1000' : '1000,10000,100000'))
  .split(',')
  .map(Number);
const dialects = (process.env.SCALE_DIALECTS ?? 'sqlite,postgres').split(',');
// SCALE_PHASES=memory: seeding, start-up, heap/RSS and the purge burst only (no refresh runs).
// SCALE_PHASES=refresh: seeding and the one-instance refresh run only (the sweep's figure).
const memoryOnly = process.env.SCALE_PHASES === 'memory';
const refreshOnly = process.env.SCALE_PHASES === 'refresh';
const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const APP_URL = 'http://127.0.0.1:9';
const REDIRECT_URI = `${APP_URL}/auth/callback`;
const CALL_CHUNK = 5_000;
const PURGE_BURST = 1_000;
const MB = 1024 * 1024;

/** Stores installed per platform transaction, and kit rows written per transaction, while seeding. */
const SEED_BATCH = 1_000;

/**
 * N installed stores, without N browser installs or N HTTP code exchanges:
 * the platform creates each store and installs the app on a batch of them in
 * one transaction (`platform.installMany`: real token pairs, stored hashed as
 * a code exchange stores them, so refreshes and API calls go through the real
 * endpoints over sockets); the kit's rows are sealed with the kit's token
 * cipher and written a batch per transaction into its installations table
 * (where `installations.upsert` would fsync once per store).
 */
async function seed(platform, app, storage, dialect, encryptionKey, n) {
  const cipher = createTokenCipher([encryptionKey]);
  const table = (dialect === 'sqlite' ? sqliteSchema : postgresSchema).installations;
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(platform.createStore({ seed: false }).storeId);
  for (let i = 0; i < n; i += SEED_BATCH) {
    const issued = platform.installMany({
      clientId: app.clientId,
      storeIds: ids.slice(i, i + SEED_BATCH),
      scopes: ['read_products'],
    });
    const now = new Date();
    const rows = await Promise.all(
      issued.map(async (t) => ({
        storeId: t.storeId,
        scopes: t.scope.split(',').join(' '),
        accessTokenEnc: await cipher.encrypt(t.access_token, t.storeId),
        refreshTokenEnc: await cipher.encrypt(t.refresh_token, t.storeId),
        keyId: cipher.currentKid,
        accessExpiresAt: new Date(now.getTime() + t.expires_in * 1000),
        installedAt: now,
        updatedAt: now,
        version: 1,
        needsReauth: false,
        platformInstalledAt: now,
      })),
    );
    if (dialect === 'sqlite') {
      storage.db.transaction((tx) => {
        // SQLite caps bound parameters per statement: 500 rows of 11 columns fit.
        for (let j = 0; j < rows.length; j += 500)
          tx.insert(table)
            .values(rows.slice(j, j + 500))
            .run();
      });
    } else {
      await storage.db.transaction(async (tx) => {
        for (let j = 0; j < rows.length; j += 500)
          await tx.insert(table).values(rows.slice(j, j + 500));
      });
    }
  }
  // The rows read back through the kit's storage, as the app will read them.
  const probe = await storage.installations.get(ids[0]);
  if (probe?.scopes[0] !== 'read_products') throw new Error('seeded rows unreadable');
  return ids;
}

/** Every installation's token expires in 120 s: inside the 300 s window, all at once. */
async function makeAllDue(storage, dialect) {
  const at = Date.now() + 120_000;
  if (dialect === 'sqlite') {
    storage.db.run(sql`UPDATE store_app_installations SET access_expires_at = ${at}`);
  } else {
    await storage.db.execute(
      sql`UPDATE store_app_installations SET access_expires_at = ${new Date(at).toISOString()}::timestamptz`,
    );
  }
}

/** CPU seconds (user + system) of every process named `name`, from /proc (Linux; 0 elsewhere). */
function procCpuSeconds(name) {
  let ticks = 0;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (comm !== name) continue;
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // The process ended between the listing and the read.
      }
    }
  } catch {
    return 0;
  }
  return ticks / 100;
}

/** The whole machine's busy CPU seconds (every process, other helpers' too), from /proc/stat. */
function machineBusySeconds() {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal
    return (cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7]) / 100;
  } catch {
    return 0;
  }
}

function startWorker(config) {
  const child = fork(workerScript, [], {
    env: { ...process.env, SAK_SCALE_WORKER: JSON.stringify(config) },
    // SCALE_CPU_PROF=<dir>: a V8 CPU profile of every worker (bench/tools/profile-summary.js reads it).
    execArgv: [
      '--expose-gc',
      ...(process.env.SCALE_CPU_PROF
        ? ['--cpu-prof', `--cpu-prof-dir=${process.env.SCALE_CPU_PROF}`]
        : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`scale worker exited with ${code}`)));
  });
  return { child, ready };
}

/** A V8 CPU profile of this process until `stop(name)` writes it to SCALE_CPU_PROF/<name>.cpuprofile. */
async function startProfile() {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(name) {
      const { profile } = await session.post('Profiler.stop');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(
        join(process.env.SCALE_CPU_PROF, `${name}.cpuprofile`),
        JSON.stringify(profile),
      );
      session.disconnect();
    },
  };
}

function ask(child, message) {
  return new Promise((resolve) => {
    child.once('message', resolve);
    child.send(message);
  });
}

async function stop(child) {
  const exited = new Promise((r) => child.once('exit', r));
  child.send({ cmd: 'close' });
  await exited;
}

async function refreshAll(platform, config, storage, dialect, instances) {
  await makeAllDue(storage, dialect);
  const workers = Array.from({ length: instances }, () =>
    startWorker({ ...config, role: 'refresh' }),
  );
  await Promise.all(workers.map((w) => w.ready));
  const calls = platform.stats().tokenRequests.refresh_token;
  // SCALE_CPU_PROF: this process (the local platform) profiled during the sweep only, not seeding.
  const profiler = process.env.SCALE_CPU_PROF ? await startProfile() : undefined;
  // CPU while the sweep runs: the kit's workers (their own figure), this process (the local
  // platform: the bench does nothing else meanwhile), Postgres' processes and the machine.
  const platformCpu0 = process.cpuUsage();
  const pgCpu0 = procCpuSeconds('postgres');
  const machine0 = machineBusySeconds();
  const load0 = loadavg()[0];
  const t = performance.now();
  const results = await Promise.all(workers.map((w) => ask(w.child, { cmd: 'sweep' })));
  const ms = performance.now() - t;
  const platformCpu = process.cpuUsage(platformCpu0);
  await profiler?.stop(`platform-${dialect}-${instances}`);
  const cpu = {
    kitS: results.reduce((n, r) => n + r.cpuS, 0),
    platformS: (platformCpu.user + platformCpu.system) / 1e6,
    postgresS: procCpuSeconds('postgres') - pgCpu0,
    machineS: machineBusySeconds() - machine0,
    load: [load0, loadavg()[0]],
  };
  await Promise.all(workers.map((w) => stop(w.child)));
  const sum = (k) => results.reduce((n, r) => n + r.swept[k], 0);
  return {
    ms,
    refreshCalls: platform.stats().tokenRequests.refresh_token - calls,
    cpu,
    stillDue: (await storage.installations.listExpiringBefore(new Date(Date.now() + 300_000), 1e6))
      .length,
    refreshed: sum('refreshed'),
    failed: sum('failed'),
    leaseLost: sum('leaseLost'),
    perInstance: results.map((r) => r.swept.refreshed),
    failures: results.map((r) => r.failures).filter((f) => Object.keys(f).length > 0),
    attempts: results.map((r) => r.attempts),
    heapMb: Math.max(...results.map((r) => r.memory.heapUsed)) / MB,
  };
}

async function measure(dialect, databaseUrl, n) {
  const platform = await startPlatform({ rateLimit: { perMinute: null, concurrent: 500 } });
  const app = platform.registerApp({
    name: 'Scale',
    redirectUri: REDIRECT_URI,
    webhookUrl: `${APP_URL}/webhooks`,
    scopes: ['read_products'],
  });
  const encryptionKey = generateKey();
  const storage = await createStorage({ databaseUrl, encryptionKeys: [encryptionKey] });
  const config = {
    databaseUrl,
    encryptionKey,
    sessionSecret: randomBytes(32).toString('base64url'),
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    webhookSecret: app.webhookSecret,
    authUrl: platform.authUrl,
    appUrl: APP_URL,
  };
  try {
    let t = performance.now();
    const ids = await seed(platform, app, storage, dialect, encryptionKey, n);
    const seedS = (performance.now() - t) / 1000;

    if (refreshOnly) {
      const one = await refreshAll(platform, config, storage, dialect, 1);
      const r = one.cpu;
      console.log(
        `scale ${dialect} N=${n}: seeded in ${seedS.toFixed(1)} s; refresh all, 1 instance: ${(one.ms / 1000).toFixed(1)} s ` +
          `(${(n / (one.ms / 1000)).toFixed(0)}/s, ${one.refreshed} refreshed, ${one.failed} failed, ` +
          `${one.refreshCalls} token endpoint refresh calls, ${one.stillDue} still due); ` +
          `CPU s: kit ${r.kitS.toFixed(1)}, platform ${r.platformS.toFixed(1)}, postgres ${r.postgresS.toFixed(1)}, ` +
          `machine ${r.machineS.toFixed(1)} of ${((2 * one.ms) / 1000).toFixed(0)}; load ${r.load.map((l) => l.toFixed(2)).join(' → ')}`,
      );
      if (one.failures?.length) console.log(`  failures by code ${JSON.stringify(one.failures)}`);
      console.log(`  token endpoint attempts (kit side): ${JSON.stringify(one.attempts)}`);
      if (one.refreshed !== n || one.failed || one.refreshCalls > n || one.stillDue) {
        process.exitCode = 1;
        console.log(
          '  ^ FAILED: every token refreshed once, no more refresh calls than tokens, none still due',
        );
      }
      return { dialect, n, seedS, refresh1S: one.ms / 1000, refresh1: one };
    }

    // Start-up with N installations stored, then one call per store.
    const appWorker = startWorker({ ...config, role: 'app' });
    const ready = await appWorker.ready;
    let failedCalls = 0;
    t = performance.now();
    for (let i = 0; i < ids.length; i += CALL_CHUNK) {
      const r = await ask(appWorker.child, { cmd: 'call', ids: ids.slice(i, i + CALL_CHUNK) });
      failedCalls += r.failed;
      if (r.firstError) console.log(`  call failed: ${r.firstError}`);
    }
    const callS = (performance.now() - t) / 1000;
    const after = (await ask(appWorker.child, { cmd: 'memory' })).memory;

    const skipped = { ms: Number.NaN, refreshed: n, failed: 0, leaseLost: 0, perInstance: [] };
    const one = memoryOnly ? skipped : await refreshAll(platform, config, storage, dialect, 1);
    const three = memoryOnly ? skipped : await refreshAll(platform, config, storage, dialect, 3);

    // A burst of uninstalls: the last 1,000 stores purged by the app instance.
    const burst = ids.slice(-Math.min(PURGE_BURST, ids.length));
    const purge = await ask(appWorker.child, { cmd: 'purge', ids: burst });
    if (purge.firstError) console.log(`  purge failed: ${purge.firstError}`);
    await stop(appWorker.child);
    const row = {
      dialect,
      n,
      seedS,
      startupMs: ready.startupMs,
      heapStartMb: ready.memory.heapUsed / MB,
      heapMb: after.heapUsed / MB,
      rssMb: after.rss / MB,
      callS,
      failedCalls,
      refresh1S: one.ms / 1000,
      refresh1: one,
      refresh3S: three.ms / 1000,
      refresh3: three,
      purgeMs: purge.ms,
      purgeFailed: purge.failed,
    };
    console.log(
      `scale ${dialect} N=${n}: seeded in ${seedS.toFixed(1)} s; start-up ${row.startupMs.toFixed(0)} ms; ` +
        `heap ${row.heapStartMb.toFixed(1)} → ${row.heapMb.toFixed(1)} MB, RSS ${row.rssMb.toFixed(0)} MB after ${n} calls ` +
        `(${callS.toFixed(1)} s, ${failedCalls} failed); refresh all: 1 instance ${row.refresh1S.toFixed(1)} s ` +
        `(${(n / row.refresh1S).toFixed(0)}/s, ${one.refreshed} refreshed, ${one.failed} failed), 3 instances ${row.refresh3S.toFixed(1)} s ` +
        `(${(n / row.refresh3S).toFixed(0)}/s, ` +
        `${three.refreshed} refreshed [${three.perInstance.join('+')}], ${three.failed} failed, ${three.leaseLost} lost leases, ` +
        `${three.refreshCalls} token endpoint calls, ${three.stillDue} still due; 1 instance: ${one.refreshCalls} calls); ` +
        `purge ${burst.length}: ${purge.ms.toFixed(0)} ms (${purge.failed} failed)`,
    );
    for (const [label, r] of [
      ['1 instance', one],
      ['3 instances', three],
    ]) {
      if (r.failures?.length)
        console.log(`  ${label}: failures by code ${JSON.stringify(r.failures)}`);
    }
    if (
      failedCalls ||
      one.refreshed !== n ||
      three.refreshed !== n ||
      one.failed ||
      three.failed ||
      one.refreshCalls > n ||
      three.refreshCalls > n ||
      purge.failed
    ) {
      process.exitCode = 1;
      console.log(
        '  ^ FAILED: every call, refresh and purge must succeed, each token refreshed once',
      );
    }
    return row;
  } finally {
    await storage.close();
    await platform.close();
  }
}

async function onPostgres(fn) {
  const dbName = `sak_scale_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  try {
    const url = new URL(ADMIN_URL);
    url.pathname = `/${dbName}`;
    return await fn(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
  }
}

// The cost of one cached store, per structure (fresh process, no database).
{
  const w = startWorker({ role: 'cost', n: 5_000 });
  const { cost } = await w.ready;
  const kb = (b) => `${(b / 1024).toFixed(2)} KB`;
  console.log(
    `per cached store (${cost.n} stores): installation cache ${kb(cost.installation)}, ` +
      `client ${kb(cost.client)}, rate-limit gate ${kb(cost.gate)}, ` +
      `remembered session token ${kb(cost.sessionToken)}`,
  );
}

const rows = [];
for (const dialect of dialects) {
  for (const n of sizes) {
    if (dialect === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'sak-bench-scale-'));
      try {
        rows.push(await measure(dialect, join(dir, 'app.db'), n));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } else {
      rows.push(await onPostgres((url) => measure(dialect, url, n)));
    }
  }
}

// The table for docs/benchmarks.md, each figure with its ratio to the smallest N.
const f = (v, d = 1) => v.toFixed(d);
console.log(
  '\n| database | N | start-up | heap after one call each (ratio) | RSS (ratio) | refresh all, 1 instance (ratio) | 3 instances (ratio) | lost leases (3) | purge 1,000 (ratio) |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
for (const dialect of dialects) {
  const own = rows.filter((r) => r.dialect === dialect && r.startupMs !== undefined);
  const base = own[0];
  if (!base) continue;
  for (const r of own) {
    console.log(
      `| ${dialect} | ${r.n.toLocaleString('en')} | ${f(r.startupMs, 0)} ms (${f(r.startupMs / base.startupMs, 2)}) | ` +
        `${f(r.heapMb)} MB (${f(r.heapMb / base.heapMb, 2)}) | ${f(r.rssMb, 0)} MB (${f(r.rssMb / base.rssMb, 2)}) | ` +
        `${f(r.refresh1S)} s (${f(r.refresh1S / base.refresh1S, 1)}) | ${f(r.refresh3S)} s (${f(r.refresh3S / base.refresh3S, 1)}) | ` +
        `${r.refresh3.leaseLost} | ${f(r.purgeMs, 0)} ms (${f(r.purgeMs / base.purgeMs, 2)}) |`,
    );
  }
}
console.log(
  `\nSCALE_JSON ${JSON.stringify(rows.map(({ refresh1, refresh3, ...r }) => ({ ...r, leaseLost3: refresh3?.leaseLost, perInstance3: refresh3?.perInstance, refreshCalls1: refresh1?.refreshCalls, cpu1: refresh1?.cpu })))}`,
);

// SCALE_SVG=docs/images/scale.svg: draws heap and refresh time (one instance) against N,
// one line per database, log-scale N, beside the table in docs/benchmarks.md.
if (process.env.SCALE_SVG) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(process.env.SCALE_SVG, chart(rows));
  console.log(`chart written to ${process.env.SCALE_SVG}`);
}

function chart(data) {
  const W = 750;
  const H = 300;
  const colours = { sqlite: '#1f6feb', postgres: '#d1242f' };
  const ns = [...new Set(data.map((r) => r.n))].sort((a, b) => a - b);
  const logMin = Math.log10(ns[0]);
  const logMax = Math.log10(ns.at(-1));
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="11">`,
    '<title>Scale: heap after one call per store, and time to refresh all N due tokens on one instance, against N</title>',
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
  ];
  const panel = (x0, title, unit, value) => {
    const [x1, y0, y1] = [x0 + 300, 240, 40];
    const max = Math.max(...data.map(value).filter(Number.isFinite));
    const step = 10 ** Math.floor(Math.log10(max / 2));
    const top = Math.ceil(max / step) * step;
    const px = (n) =>
      logMax === logMin ? x0 + 150 : x0 + 10 + ((Math.log10(n) - logMin) / (logMax - logMin)) * 280;
    const py = (v) => y0 - (v / top) * (y0 - y1);
    out.push(`<text x="${x0}" y="26" font-size="13" font-weight="600">${title}</text>`);
    out.push(`<line x1="${x0}" y1="${y0}" x2="${x1}" y2="${y0}" stroke="#333"/>`);
    out.push(`<line x1="${x0}" y1="${y1}" x2="${x0}" y2="${y0}" stroke="#333"/>`);
    for (let v = 0; v <= top + 1e-9; v += top / 4) {
      out.push(
        `<line x1="${x0}" y1="${py(v).toFixed(1)}" x2="${x1}" y2="${py(v).toFixed(1)}" stroke="#eee"/>`,
      );
      out.push(
        `<text x="${x0 - 6}" y="${(py(v) + 4).toFixed(1)}" text-anchor="end">${+v.toFixed(1)}</text>`,
      );
    }
    out.push(
      `<text x="${x0 - 44}" y="140" transform="rotate(-90 ${x0 - 44} 140)" text-anchor="middle">${unit}</text>`,
    );
    for (const n of ns) {
      out.push(
        `<text x="${px(n).toFixed(1)}" y="256" text-anchor="middle">${n.toLocaleString('en')}</text>`,
      );
    }
    out.push(
      `<text x="${x0 + 150}" y="272" text-anchor="middle">installed stores N (log scale)</text>`,
    );
    for (const dialect of Object.keys(colours)) {
      const pts = data.filter((r) => r.dialect === dialect && Number.isFinite(value(r)));
      if (pts.length === 0) continue;
      const xy = pts.map((r) => [px(r.n).toFixed(1), py(value(r)).toFixed(1)]);
      out.push(
        `<polyline points="${xy.map((p) => p.join(',')).join(' ')}" fill="none" stroke="${colours[dialect]}" stroke-width="2"/>`,
      );
      for (const [x, y] of xy)
        out.push(`<circle cx="${x}" cy="${y}" r="3" fill="${colours[dialect]}"/>`);
    }
  };
  panel(60, 'Heap after one API call per store', 'MB', (r) => r.heapMb);
  panel(430, 'Refresh all N due tokens, one instance', 's', (r) => r.refresh1S);
  let lx = 430;
  for (const [dialect, colour] of Object.entries(colours)) {
    out.push(`<rect x="${lx}" y="286" width="10" height="3" fill="${colour}"/>`);
    out.push(`<text x="${lx + 14}" y="291">${dialect === 'sqlite' ? 'SQLite' : 'Postgres'}</text>`);
    lx += 90;
  }
  out.push('</svg>', '');
  return out.join('\n');
}
