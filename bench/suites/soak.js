// Soak (issue 15): the kit mounted as the README shows (bench/peers/server.js,
// NODE_ENV=production, default logging, SQLite file) under closed-loop load for
// SOAK_SECONDS each (default 60; BENCH_QUICK=1 → 10):
//   1. the webhook receiver, fresh signed ids, 50 connections (every delivery
//      recorded in the dedupe table);
//   2. an authenticated route (app session token), 16 connections.
// The server process's RSS and live heap (after a full GC) are sampled every
// 5 s; target: flat (end within a few MB of the start, no upward trend).
// `npm run build`, then `node bench/suites/soak.js` (or `npm run bench -- soak`).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, report, signedDelivery } from '../lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const quick = process.env.BENCH_QUICK === '1';
const seconds = Number(process.env.SOAK_SECONDS ?? (quick ? 10 : 60));
const SLICE = 5;
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const key = Buffer.from(secret.slice(6), 'base64');

const server = fork(join(here, '..', 'peers', 'server.js'), [], {
  // Without the Shopify side: its packages are installed only by `npm run bench:peers`.
  env: { ...process.env, BENCH_WEBHOOK_SECRET: secret, BENCH_WITHOUT_SHOPIFY: '1' },
  execArgv: ['--expose-gc'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const info = await new Promise((resolve, reject) => {
  server.once('message', resolve);
  server.once('exit', (code) => reject(new Error(`peers-server exited with ${code}`)));
});
const memory = () =>
  new Promise((resolve) => {
    const on = (m) => {
      if (m?.memory) {
        server.off('message', on);
        resolve(m.memory);
      }
    };
    server.on('message', on);
    server.send('memory');
  });

const delivery = () =>
  signedDelivery(key, { type: 'orders.create', data: { store_id: 'st_soak' } });

const MB = (b) => Math.round((b / 1048576) * 10) / 10;

async function soak(name, options) {
  // A short warm-up so start figures are not the cold process.
  await load(options.url, { ...options, seconds: 2 });
  const start = await memory();
  const samples = [start];
  let requests = 0;
  let bad = 0;
  for (let t = 0; t < seconds; t += SLICE) {
    const r = await load(options.url, { ...options, seconds: Math.min(SLICE, seconds - t) });
    requests += r.requests;
    bad +=
      r.errors + Object.entries(r.statuses).reduce((n, [s, c]) => n + (s === '200' ? 0 : c), 0);
    samples.push(await memory());
  }
  const end = samples.at(-1);
  report(`soak ${name}, ${seconds} s`, {
    requests,
    rps: Math.round(requests / seconds),
    non200_or_errors: bad,
    rss_start_mb: MB(start.rss),
    rss_end_mb: MB(end.rss),
    rss_max_mb: MB(Math.max(...samples.map((s) => s.rss))),
    heap_start_mb: MB(start.heapUsed),
    heap_end_mb: MB(end.heapUsed),
    heap_max_mb: MB(Math.max(...samples.map((s) => s.heapUsed))),
  });
  console.log(`  heap per ${SLICE} s (MB): ${samples.map((s) => MB(s.heapUsed)).join(' ')}`);
  console.log(`  rss per ${SLICE} s (MB): ${samples.map((s) => MB(s.rss)).join(' ')}`);
  if (bad > 0) process.exitCode = 1;
}

try {
  await soak('webhook receiver (fresh ids, 50 connections)', {
    url: `${info.urls.kit}/webhooks`,
    method: 'POST',
    concurrency: 50,
    perRequest: delivery,
  });
  await soak('authenticated route (app session token, 16 connections)', {
    url: `${info.urls.kit}/api/data`,
    concurrency: 16,
    headers: { authorization: `Bearer ${info.kitToken}` },
  });
} finally {
  server.send('close');
  await new Promise((r) => server.once('exit', r));
}
