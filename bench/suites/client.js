// API client and authenticated() (issue 4, "Done when"):
// (a) requests/s of a route behind authenticated() (valid session, warm) as a
//     ratio of the same route without it, measured in interleaved rounds;
// (b) the platform set to 1,200 requests/min for one store, 100 concurrent
//     callers for 30 s through the client: achieved rate / allowed rate,
//     requests failed to the caller, share of 429 responses;
// (c) paging 10,000 products with limit 250: pages, time, memory — against
//     collecting every page into one array (the buffering baseline).
// Plain ESM against the built dist/ (`npm run build` first).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import session from 'express-session';
import { resolveAuthenticatedOptions } from '../../dist/authenticated/options.js';
import { createSessionTokens } from '../../dist/authenticated/session-token.js';
import { startPlatform } from '../../dist/platform/index.js';
import { createAuthenticated } from '../../dist/shells/express/authenticated.js';
import { createStorage } from '../../dist/storage/index.js';
import { clientRuntime, compare, installStore, load, registerBenchApp, report } from '../lib.js';

const quick = process.env.BENCH_QUICK === '1';
const dir = mkdtempSync(join(tmpdir(), 'sak-bench-client-'));
const platform = await startPlatform();
const storage = await createStorage({
  databaseUrl: `file:${join(dir, 'app.db')}`,
  encryptionKeys: [randomBytes(32).toString('base64url')],
});
const register = (name, rateLimit) => registerBenchApp(platform, name, { rateLimit });
const install = ({ app }, seed) => installStore(platform, storage, app, { seed });
const runtime = ({ endpoint }, clientOptions = {}) =>
  clientRuntime({ platform, storage, endpoint, clientOptions });

// --- (a) authenticated() overhead -------------------------------------------
{
  const registered = register('bench-a', { perMinute: null, concurrent: 500 });
  const storeId = await install(registered, 1);
  const { tokens, clients } = await runtime(registered);
  const secret = randomBytes(32).toString('base64url');
  const sessionTokens = createSessionTokens({
    secrets: [secret],
    clientId: registered.app.clientId,
    issuer: 'http://127.0.0.1:3000',
    ttlSeconds: 300,
    clockToleranceSeconds: 5,
  });
  const authenticated = createAuthenticated({
    tokens,
    clients,
    scopes: ['read_products'],
    sessionTokens,
    beginUrl: 'http://127.0.0.1:3000/auth',
    options: resolveAuthenticatedOptions(),
  });
  const app = express();
  // Both routes sit behind the same session middleware, so the ratio isolates authenticated().
  app.use(session({ secret, resave: false, saveUninitialized: false }));
  app.get('/login', (req, res) => {
    req.session.storeId = storeId;
    res.send('ok');
  });
  app.get('/plain', (_req, res) => res.json({ ok: true }));
  app.get('/auth', authenticated(), (_req, res) => res.json({ ok: true }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const login = await fetch(`${base}/login`);
  const cookie = login.headers.get('set-cookie').split(';')[0];
  // Bound to the installation, as the kit mints them (issue 23).
  const { installedAt } = await storage.installations.get(storeId);
  const { token } = await sessionTokens.mint(storeId, { installedAt: installedAt.getTime() });
  const before = platform.stats().tokenRequests.refresh_token;
  // Interleaved rounds, medians: the shared machine's noise hits both sides alike.
  const seconds = quick ? 1 : 2;
  const rounds = quick ? 3 : 9;
  const measure = async (headers) => {
    const r = await compare(
      rounds,
      async () => (await load(`${base}/auth`, { seconds, concurrency: 16, headers })).rps,
      async () => (await load(`${base}/plain`, { seconds, concurrency: 16, headers })).rps,
    );
    return {
      authenticated_rps: r.a,
      plain_rps: r.b,
      ratio: r.ratio,
      paired_ratio: r.pairedRatio,
      target: '>=0.85',
    };
  };
  report('(a) cookie session', await measure({ cookie }));
  report('(a) app session token', await measure({ authorization: `Bearer ${token}` }));
  // The middleware's own cost, without HTTP: far steadier than the ratios above on a
  // shared machine, and what the ratio's gap would be if it were real work.
  const direct = authenticated();
  const bearerHeaders = { authorization: `Bearer ${token}` };
  const fakeReq = { get: (n) => bearerHeaders[n.toLowerCase()], headers: bearerHeaders, query: {} };
  const once = () =>
    new Promise((resolve, reject) => {
      const res = { locals: {} };
      direct(fakeReq, res, (err) => (err || !res.locals.store ? reject(err) : resolve()));
    });
  for (let i = 0; i < 5_000; i++) await once();
  const calls = quick ? 20_000 : 100_000;
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) await once();
  report('(a) authenticated() alone, app session token, no HTTP', {
    us_per_request: ((performance.now() - t0) * 1000) / calls,
  });
  report('(a) platform calls on the request path', {
    refreshes: platform.stats().tokenRequests.refresh_token - before,
  });
  await new Promise((r) => server.close(r));
}

// --- (b) pacing at 1,200 requests/min --------------------------------------
{
  const perMinute = 1200;
  const registered = register('bench-b', { perMinute, concurrent: 50 });
  const storeId = await install(registered, 5);
  let responses = 0;
  let tooMany = 0;
  const counting = async (url, init) => {
    const res = await fetch(url, init);
    responses++;
    if (res.status === 429) tooMany++;
    return res;
  };
  const { clients } = await runtime(registered, { fetch: counting });
  const client = clients.forStore(storeId);
  // Start on a fresh platform window so "allowed" is exactly perMinute/60 per second.
  const nowSec = Math.floor(Date.now() / 1000);
  platform.advanceClock(60 - (nowSec % 60));
  const seconds = quick ? 10 : 30;
  const end = performance.now() + seconds * 1000;
  let ok = 0;
  let failed = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 100 }, async () => {
      while (performance.now() < end) {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), Math.max(1, end - performance.now()));
        try {
          await client.products.list({ limit: 1 }, { signal: ac.signal });
          if (performance.now() <= end) ok++;
        } catch (err) {
          // Callers still queued at the end of the run are cut off, not failed.
          if (err?.code !== 'ABORTED') failed++;
        } finally {
          clearTimeout(timer);
        }
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const allowed = (perMinute / 60) * elapsed;
  report('(b) 1,200/min, 100 callers', {
    seconds: elapsed,
    ok,
    achieved_per_s: ok / elapsed,
    allowed_per_s: perMinute / 60,
    achieved_fraction: ok / allowed,
    failed,
    responses,
    share_429: responses ? tooMany / responses : 0,
    targets: 'fraction>=0.95 failed=0 share_429<=0.01',
  });
}

// --- (c) paging 10,000 products --------------------------------------------
{
  const registered = register('bench-c', { perMinute: null, concurrent: 500 });
  const storeId = await install(registered, 10_000);
  let pages = 0;
  const counting = (url, init) => {
    pages++;
    return fetch(url, init);
  };
  const { clients } = await runtime(registered, { fetch: counting });
  const client = clients.forStore(storeId);

  // Live heap after a full GC at every page boundary: what the loop retains, without
  // the in-process platform's garbage. Peak RSS includes the platform (same process).
  async function measure(fn) {
    globalThis.gc?.();
    const base = process.memoryUsage().heapUsed;
    let peakLive = base;
    let peakRss = process.memoryUsage().rss;
    const sample = () => {
      globalThis.gc?.();
      const m = process.memoryUsage();
      peakLive = Math.max(peakLive, m.heapUsed);
      peakRss = Math.max(peakRss, m.rss);
    };
    pages = 0;
    const t0 = performance.now();
    const records = await fn(sample);
    const ms = performance.now() - t0;
    return {
      records,
      pages,
      ms_including_gc: ms,
      peak_live_heap_growth_mb: (peakLive - base) / 2 ** 20,
      peak_rss_mb: peakRss / 2 ** 20,
    };
  }

  const plain = async () => {
    pages = 0;
    const t0 = performance.now();
    let n = 0;
    for await (const _p of client.paginate(client.products.list, { limit: 250 })) n++;
    return { records: n, pages, ms: performance.now() - t0 };
  };
  report('(c) paginate 10,000 (time, no sampling)', await plain());
  const streaming = await measure(async (sample) => {
    let n = 0;
    for await (const _p of client.paginate(client.products.list, { limit: 250 })) {
      if (++n % 250 === 0) sample();
    }
    return n;
  });
  const buffering = await measure(async (sample) => {
    const all = [];
    let cursor;
    for (;;) {
      const page = await client.products.list({ limit: 250, cursor });
      all.push(...page.data);
      sample();
      if (!page.pagination.hasMore) break;
      cursor = page.pagination.nextCursor;
    }
    return all.length;
  });
  report('(c) paginate 10,000 (streaming)', streaming);
  report('(c) collect all pages (baseline)', buffering);
}

await storage.close();
await platform.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
