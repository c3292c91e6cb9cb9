// The kit side by side with what its users would otherwise pick (issue 15):
// @shopify/shopify-api (+ its memory and SQLite session storages),
// standardwebhooks, @octokit/webhooks-methods, bare Express 5 and bare Hono, in
// interleaved rounds (medians; "paired" is the median of each round's own
// ratio, robust to the machine's load drifting).
//
//   npm run bench:peers                  every figure (about 6 minutes)
//   npm run bench:peers -- receiver      figures whose name contains "receiver"
//   BENCH_QUICK=1 npm run bench:peers    fewer, shorter rounds
//   BENCH_CONNECTIONS=16,50              connection counts of the HTTP figures
//   BENCH_STORES=1000                    stores (a session token each) the route names
//   BENCH_WARM_SECONDS=0.3               unmeasured load before each HTTP round (0: none)
//   BENCH_PROCESSES=3                    processes a side for the route figures (rounds in turn)
//   BENCH_BASELINE=<dir>                 adds the route figures of another build (before/after
//                                        in one run): <dir>/dist served by this bench's servers,
//                                        <dir>/node_modules beside it (e.g. a worktree of main, built)
//
// HTTP figures (issue 24 item 4: measure what users see): every server runs in
// a child process of its own (bench/peers/server.js, one side each), the load
// comes from this one through bench/tools/socket-load.js (keep-alive, one
// request in flight per connection, prepared bytes: cheap enough not to be the
// bottleneck at 50 connections), at 16 and at 50 connections. The route's
// requests name 1000 stores round robin, each with its own session token.
// Besides requests/s (wall clock), each figure gives the server's CPU time per
// request: on a shared, loaded machine the CPU cost is far steadier than the
// throughput. Pure-function figures give ops per CPU second.
process.env.NODE_ENV = 'production';

import { fork, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verify as octokitVerify } from '@octokit/webhooks-methods';
import '@shopify/shopify-api/adapters/node';
import { Session } from '@shopify/shopify-api';
import { SQLiteSessionStorage } from '@shopify/shopify-app-session-storage-sqlite';
import { Webhook } from 'standardwebhooks';
import { internalsOf } from '../../dist/compose/internals.js';
import {
  verify as kitVerify,
  verifySignature as kitVerifySignature,
  storeApp,
} from '../../dist/index.js';
import { median, report, signedDelivery } from '../lib.js';
import { requestBytes, socketLoad } from '../tools/socket-load.js';

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2];
const quick = process.env.BENCH_QUICK === '1';
const ROUNDS = quick ? 5 : 7;
const HTTP_SECONDS = quick ? 1 : 2;
/**
 * An unmeasured pass of load before each HTTP round (BENCH_WARM_SECONDS, default 0.3; 0:
 * none). The servers take turns, so each sits idle for most of the run, and what a server
 * does once per store per interval falls due while it idles: the kit's installation cache
 * (`refresh.cacheTtlMs`, 30 s) then reloads all its stores inside one measured round,
 * where a server under steady load spreads that over 30 s of requests
 * (docs/benchmarks.md, "Issue 31: the cache's reload and the process lottery").
 */
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 0.3);
const dir = mkdtempSync(join(tmpdir(), 'sak-bench-peers-'));
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const table = [];

const selected = (name) => !filter || name.includes(filter);
const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** Interleaves the sides (rotating which goes first); medians and paired ratios vs `base`. */
async function rounds(n, sides) {
  const names = Object.keys(sides);
  const results = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < n; i++) {
    const order = names.map((_, j) => names[(i + j) % names.length]);
    for (const name of order) results[name].push(await sides[name]());
  }
  return {
    median: (k) => median(results[k]),
    paired: (a, b) => median(results[a].map((x, i) => x / results[b][i])),
    all: results,
  };
}

function row(figure, kit, peer, ratio, paired, target, unit) {
  table.push({ figure, kit, peer, ratio, paired, target, unit });
  report(figure, { kit, peer, unit, ratio, paired, target });
}

/** A row of side `a` vs side `b` from interleaved `rounds()`: medians, their ratio, paired ratio. */
function roundsRow(r, figure, a, b, target, unit) {
  row(figure, r.median(a), r.median(b), r.median(a) / r.median(b), r.paired(a, b), target, unit);
}

// A realistic small delivery (~400 bytes), the same bytes for every verifier.
const payload = {
  type: 'orders.create',
  timestamp: new Date().toISOString(),
  data: {
    store_id: 'st_bench',
    order: {
      id: 'ord_1001',
      total: '129.90',
      currency: 'EUR',
      customer: { id: 'cus_42', email: 'buyer@example.com' },
      lines: [
        { sku: 'TSHIRT-M-BLUE', quantity: 2, price: '29.95' },
        { sku: 'MUG-WHITE', quantity: 1, price: '70.00' },
      ],
    },
  },
};

/** CPU time of this process (all its threads) in µs. */
const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

// --- verify: the pure functions ---------------------------------------------
if (selected('verify')) {
  const body = JSON.stringify(payload);
  const raw = Buffer.from(body);
  const id = 'msg_2b7ZbvzkWZMyE3aBPDKnqZ5yTAb';
  const ts = Math.floor(Date.now() / 1000);
  const mac = createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
    .update(`${id}.${ts}.${body}`)
    .digest('base64');
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': `v1,${mac}`,
  };
  const octokitSecret = randomBytes(20).toString('hex');
  const octokitSig = `sha256=${createHmac('sha256', octokitSecret).update(body).digest('hex')}`;
  // The same work for octokit: its HMAC over the bytes the kit signs
  // (`{id}.{timestamp}.{body}`, 42 bytes more than the body alone). octokit
  // checks no id and no timestamp; the kit does both in its figure.
  const signedContent = `${id}.${ts}.${body}`;
  const octokitSameSig = `sha256=${createHmac('sha256', octokitSecret).update(signedContent).digest('hex')}`;
  const std = new Webhook(secret);
  const calls = quick ? 20_000 : 100_000;
  // ops per CPU second over `calls` calls; each library called the way its docs
  // show: octokit's verify returns a promise (awaited), the others return the result.
  const ops = (fn) => async () => {
    const c0 = cpuNow();
    for (let i = 0; i < calls; i++) fn();
    return calls / ((cpuNow() - c0) / 1e6);
  };
  const opsAsync = (fn) => async () => {
    const c0 = cpuNow();
    for (let i = 0; i < calls; i++) await fn();
    return calls / ((cpuNow() - c0) / 1e6);
  };
  const sides = {
    // Signature of the raw bytes only, like octokit's verify (which parses nothing).
    kit: ops(() => {
      if (kitVerifySignature(raw, headers, [secret]).id !== id) throw new Error('kit');
    }),
    // Signature, then JSON parse into a typed event, like standardwebhooks' verify.
    kitParsed: ops(() => {
      if (kitVerify(raw, headers, [secret]).topic !== 'orders.create') throw new Error('kit');
    }),
    octokit: opsAsync(async () => {
      if (!(await octokitVerify(octokitSecret, signedContent, octokitSameSig))) {
        throw new Error('octokit');
      }
    }),
    octokitBodyOnly: opsAsync(async () => {
      if (!(await octokitVerify(octokitSecret, body, octokitSig))) throw new Error('octokit');
    }),
    standardwebhooks: ops(() => {
      if (std.verify(body, headers).type !== 'orders.create') throw new Error('standardwebhooks');
    }),
  };
  for (const s of Object.values(sides)) await s(); // warm-up
  const r = await rounds(ROUNDS, sides);
  roundsRow(
    r,
    'verify, signature of the bytes (ops per CPU s): kit verifySignature (id, timestamp, HMAC of id.ts.body) vs octokit verify (HMAC of the same bytes, no id or timestamp check)',
    'kit',
    'octokit',
    '>=1.0',
    'ops/s',
  );
  roundsRow(
    r,
    'verify + parse (ops per CPU s): kit verify vs standardwebhooks verify',
    'kitParsed',
    'standardwebhooks',
    '>=1.0',
    'ops/s',
  );
  report('  verify detail', {
    octokit_body_only_ops: r.median('octokitBodyOnly'),
    kit_vs_octokit_body_only: r.median('kit') / r.median('octokitBodyOnly'),
    kit_verify_parsed_vs_octokit: r.median('kitParsed') / r.median('octokit'),
  });
}

// --- HTTP: each server in a process of its own ------------------------------------
// One child per side (bench/peers/server.js with BENCH_SIDES), so no two servers
// share a heap, a GC or an event loop, and each child's CPU time is its own
// server's. The load is bench/tools/socket-load.js (prepared request bytes,
// keep-alive, one request in flight per connection), lean enough that at 50
// connections the server, not the generator, sets the pace.
const httpFigures = ['receiver', 'route', 'hono-route'].some(selected);
const BASELINE = process.env.BENCH_BASELINE;
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,50').split(',').map(Number);
// Users have many merchants: every request of the route names the next of
// STORES stores (round robin), each with its own session token, as a busy app
// serves many embedded pages at once. Each token is seen again every STORES
// requests, so after the warm-up every cache holds it (as in an app whose
// merchants keep their page open: one token per store per token lifetime).
const STORES = Number(process.env.BENCH_STORES ?? 1000);
const children = [];
// A figure that throws must not leave its servers running.
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill();
});

/** Starts `side` in its own process; resolves to { info, ask(what) }. */
async function startSide(side, env = {}) {
  const child = fork(join(here, 'server.js'), [], {
    env: {
      ...process.env,
      BENCH_WEBHOOK_SECRET: secret,
      BENCH_SIDES: side,
      BENCH_STORES: String(STORES),
      ...env,
    },
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`peers-server ${side} exited with ${code}`)));
  });
  const ask = (what) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m && what in m) {
          child.off('message', on);
          resolve(m[what]);
        }
      };
      child.on('message', on);
      child.send(what);
    });
  return { info, ask, url: info.urls[side] };
}

/**
 * One round of load on a side: { rps, cpuUs (its server's CPU µs per request),
 * requests, bytes (per response) }. `next()` gives each request's bytes.
 */
const measureHttp = (side, connections, next) => async () => {
  // Unmeasured (BENCH_WARM_SECONDS): see WARM_SECONDS.
  if (WARM_SECONDS > 0) await socketLoad(side.url, { seconds: WARM_SECONDS, connections, next });
  const c0 = await side.ask('cpu');
  const r = await socketLoad(side.url, { seconds: HTTP_SECONDS, connections, next });
  const c1 = await side.ask('cpu');
  if (r.errors || Object.keys(r.statuses).some((s) => s !== '200')) {
    throw new Error(`unexpected responses from ${side.url}: ${JSON.stringify(r)}`);
  }
  return { rps: r.rps, cpuUs: (c1 - c0) / r.requests, requests: r.requests, bytes: r.bytes };
};

/** Interleaved HTTP rounds (after one warm-up each); rows for rps and CPU per request of `a` vs `b`. */
async function httpRows(sides, pairs) {
  const names = Object.keys(sides);
  for (const name of names) await sides[name]({ warmup: true });
  const results = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length];
      results[name].push(await sides[name]());
    }
  }
  const rps = (k) => results[k].map((x) => x.rps);
  const cpu = (k) => results[k].map((x) => x.cpuUs);
  for (const [figure, a, b, target] of pairs) {
    row(
      figure,
      median(rps(a)),
      median(rps(b)),
      median(rps(a)) / median(rps(b)),
      median(rps(a).map((x, i) => x / rps(b)[i])),
      target,
      'req/s',
    );
    // CPU per request: the inverse ratio is the throughput a CPU-bound server would reach.
    row(
      `  same, by server CPU per request (peer µs / kit µs)`,
      median(cpu(a)),
      median(cpu(b)),
      median(cpu(b)) / median(cpu(a)),
      median(cpu(b).map((x, i) => x / cpu(a)[i])),
      target,
      'µs',
    );
  }
  report('  response bytes', Object.fromEntries(names.map((k) => [k, results[k][0].bytes])));
  return results;
}

const webhookKey = Buffer.from(secret.slice(6), 'base64');
/** A fresh, signed delivery (new id and body) for every request. */
const freshDelivery = (url) => () => {
  const d = signedDelivery(webhookKey, payload);
  return requestBytes(url, { method: 'POST', headers: d.headers, body: d.body });
};
/** The next of `tokens` for every request (round robin), as prepared bytes. */
const roundRobin = (url, tokens) => {
  const requests = tokens.map((t) =>
    requestBytes(url, { headers: { authorization: `Bearer ${t}`, accept: 'application/json' } }),
  );
  let i = 0;
  return () => requests[i++ % requests.length];
};
/** A side's measurement that skips its result on the warm-up call (one per process). */
const warmable = (measure) => async (o) => {
  if (o?.warmup) {
    for (let i = 0; i < (measure.processes ?? 1); i++) await measure();
    return undefined;
  }
  return measure();
};

/**
 * Processes per side of the route figures (BENCH_PROCESSES, default 3). Two processes of
 * the same server differ by up to a tenth in req/s and CPU a request for the whole of
 * their life (where V8 puts things, which code it optimises when), so one process a side
 * makes each run's ratio one draw of that; rounds go to a side's processes in turn
 * (docs/benchmarks.md, "Issue 31: the cache's reload and the process lottery").
 */
const PROCESSES = Math.max(1, Number(process.env.BENCH_PROCESSES ?? 3));

/** `PROCESSES` servers of `side` (see startSide). */
async function startSides(side, env = {}) {
  const all = [];
  for (let i = 0; i < PROCESSES; i++) all.push(await startSide(side, env));
  return all;
}

/** measureHttp over a side's processes, one round each in turn; `nextOf(process)` its requests. */
function rotating(list, connections, nextOf) {
  const measures = list.map((s) => measureHttp(s, connections, nextOf(s)));
  let turn = 0;
  const measure = () => measures[turn++ % measures.length]();
  measure.processes = measures.length;
  return measure;
}

if (httpFigures) {
  console.log(
    `HTTP: one process per server (the route figures: ${PROCESSES} per side, rounds in turn), ${CONNECTIONS.join(' and ')} connections, ${STORES} stores (a token each, round robin); load ${loadAverage()}`,
  );
}

// --- receiver over HTTP -------------------------------------------------------
if (selected('receiver')) {
  const kit = await startSide('kit', { BENCH_STORES: '1' });
  const peer = await startSide('webhook');
  const durable = await startSide('webhookDurable', {
    BENCH_SQLITE_SYNCHRONOUS: String(kit.info.kitSynchronous),
  });
  for (const connections of CONNECTIONS) {
    // Every 200 the kit gave must be a delivery whose handler ran and whose id
    // was committed: a receiver that answered early would look fast here.
    const before = await kit.ask('webhooks');
    let answered = 0;
    const kitSide = measureHttp(kit, connections, freshDelivery(`${kit.url}/webhooks`));
    await httpRows(
      {
        kit: warmable(async () => {
          const m = await kitSide();
          answered += m.requests;
          return m;
        }),
        peer: warmable(measureHttp(peer, connections, freshDelivery(`${peer.url}/webhooks`))),
        durable: warmable(
          measureHttp(durable, connections, freshDelivery(`${durable.url}/webhooks`)),
        ),
      },
      [
        [
          `receiver, HTTP, fresh ids, ${connections} conn (req/s) vs Express5+raw+standardwebhooks+memory dedupe`,
          'kit',
          'peer',
          '>=0.8',
        ],
        [
          `receiver, ${connections} conn (req/s) vs the same peer committing each id to SQLite in its own transaction (WAL, synchronous=${kit.info.kitSynchronous} as the kit's connection)`,
          'kit',
          'durable',
          '(same durability)',
        ],
      ],
    );
    const after = await kit.ask('webhooks');
    const handled = after.handled - before.handled;
    const recorded = after.recorded - before.recorded;
    console.log(
      `receiver check, ${connections} conn: ${answered} deliveries answered 200, ${handled} handled, ${recorded} ids committed`,
    );
    if (handled !== answered || recorded !== answered) {
      throw new Error('the kit answered 200 for deliveries it did not handle and commit');
    }
  }
  for (const s of [kit, peer, durable]) s.ask('close');
}

// --- authenticated route --------------------------------------------------------
if (selected('route')) {
  const kit = await startSides('kit');
  const bare = await startSides('bare');
  const shopify = await startSides('shopify');
  const before = BASELINE
    ? await startSides('kit', { BENCH_KIT_DIST: join(BASELINE, 'dist') })
    : undefined;
  const tokens = kit[0].info.kitTokens;
  const api = (s, t) => roundRobin(`${s.url}/api/data`, t ?? s.info.kitTokens);
  for (const connections of CONNECTIONS) {
    await httpRows(
      {
        kit: warmable(rotating(kit, connections, (s) => api(s))),
        ...(before
          ? {
              before: warmable(rotating(before, connections, (s) => api(s))),
            }
          : {}),
        // The same tokens: bare Express reads none of them (the same handler, no kit).
        bare: warmable(rotating(bare, connections, (s) => api(s, tokens))),
        shopify: warmable(rotating(shopify, connections, (s) => api(s, s.info.shopifyTokens))),
      },
      [
        [
          `authenticated route as README mounts it, ${connections} conn, ${STORES} stores (req/s) vs the same handler on bare Express`,
          'kit',
          'bare',
          '>=0.9',
        ],
        [
          `same route, ${connections} conn (req/s) vs Shopify decodeSessionToken + memory loadSession + isActive`,
          'kit',
          'shopify',
          '>=1.2',
        ],
        ...(before
          ? [
              [
                `  before (${BASELINE}): the same route, ${connections} conn (req/s) vs the same handler on bare Express`,
                'before',
                'bare',
                '>=0.9',
              ],
            ]
          : []),
      ],
    );
  }
  for (const s of [kit, bare, shopify, before ?? []].flat()) s.ask('close');
}

// --- the same route on the Fetch shell: Hono on Node ------------------------------
if (selected('hono-route')) {
  const hono = await startSides('hono');
  const bare = await startSides('honoBare');
  const tokens = hono[0].info.kitTokens;
  const api = (s, t) => roundRobin(`${s.url}/api/data`, t ?? s.info.kitTokens);
  // The mount without a middleware (hono.fetch(app), hono.authenticated(handler)), where
  // this build has it.
  const wrapped =
    hono[0].info.honoMount === 'hono'
      ? await startSides('hono', { BENCH_VARIANT: 'hono-wrapped' })
      : undefined;
  // Bare Hono sending the same three header lines as the kit's bearer answer, in its own
  // answer: the kit's route against a peer that sends the same bytes.
  const bareHeaders = wrapped
    ? await startSides('honoBare', { BENCH_VARIANT: 'hono-bare-header-bytes' })
    : undefined;
  // Before: the baseline build mounted as its docs show: through store-app-kit/hono when it
  // has one, else one middleware over kit.fetch and kit.secureResponse (BENCH_HONO_BEFORE
  // names another server.js variant, e.g. hono-main-mount for builds before issue 31).
  const before = BASELINE
    ? await startSides('hono', {
        BENCH_KIT_DIST: join(BASELINE, 'dist'),
        BENCH_VARIANT: process.env.BENCH_HONO_BEFORE ?? '',
      })
    : undefined;
  const headers = (side) =>
    side.info.honoMount === 'hono'
      ? 'through store-app-kit/hono'
      : side.info.honoSecure
        ? 'kit.fetch, kit.authenticate and kit.secureResponse'
        : 'without a header set (no kit.secureResponse)';
  console.log(
    `Hono route: ${headers(hono[0])}${before ? `; before: ${headers(before[0])}` : ''}; ${PROCESSES} processes a side`,
  );
  for (const connections of CONNECTIONS) {
    await httpRows(
      {
        hono: warmable(rotating(hono, connections, (s) => api(s))),
        ...(wrapped
          ? {
              wrapped: warmable(rotating(wrapped, connections, (s) => api(s))),
            }
          : {}),
        ...(bareHeaders
          ? {
              bareHeaders: warmable(rotating(bareHeaders, connections, (s) => api(s, tokens))),
            }
          : {}),
        // The same tokens: bare Hono reads none of them (the same handler, no kit).
        bare: warmable(rotating(bare, connections, (s) => api(s, tokens))),
        ...(before
          ? {
              before: warmable(rotating(before, connections, (s) => api(s))),
            }
          : {}),
      },
      [
        [
          `Hono route behind the kit as docs/runtimes.md mounts it, ${connections} conn, ${STORES} stores (req/s) vs the same handler on bare Hono`,
          'hono',
          'bare',
          '>=0.85',
        ],
        ...(wrapped
          ? [
              [
                `  the same route around the app (hono.fetch(app), hono.authenticated(handler): no middleware), ${connections} conn (req/s) vs bare Hono`,
                'wrapped',
                'bare',
                '>=0.85',
              ],
              [
                `  bare Hono with the kit's three bearer header lines (HSTS, nosniff, Vary) in its own answer, ${connections} conn (req/s) vs bare Hono`,
                'bareHeaders',
                'bare',
                '—',
              ],
              [
                `  the route around the app vs bare Hono with those header lines, ${connections} conn (req/s)`,
                'wrapped',
                'bareHeaders',
                '—',
              ],
            ]
          : []),
        ...(before
          ? [
              [
                `  before (${BASELINE}, mounted as its docs showed): the same Hono route, ${connections} conn (req/s) vs bare Hono`,
                'before',
                'bare',
                '>=0.85',
              ],
            ]
          : []),
      ],
    );
  }
  for (const s of [hono, wrapped, bareHeaders, bare, before].flatMap((x) => x ?? []))
    s.ask('close');
}
if (children.length) {
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)),
  );
  console.log(`HTTP done; load ${loadAverage()}`);
}

// --- token load from storage ---------------------------------------------------
if (selected('token-load')) {
  const kit = await storeApp({
    appUrl: 'http://127.0.0.1:3000',
    oauth: {
      clientId: 'bench',
      clientSecret: randomBytes(24).toString('base64url'),
      scopes: ['read_products'],
      authUrl: 'http://127.0.0.1:9',
    },
    storage: {
      databaseUrl: `file:${join(dir, 'kit.db')}`,
      encryptionKeys: [randomBytes(32).toString('base64url')],
    },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: [secret] },
    refresh: { sweepIntervalMs: 0 },
    logger: { level: 'warn' },
  });
  const storeId = 'st_bench';
  // Token shapes as the platform issues them (opaque, ~50 characters).
  await internalsOf(kit).storage.installations.upsert(storeId, {
    scopes: ['read_products'],
    accessToken: `at_${randomBytes(32).toString('base64url')}`,
    refreshToken: `rt_${randomBytes(32).toString('base64url')}`,
    accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
  });
  const shop = 'bench-store.myshopify.com';
  const session = new Session({
    id: `offline_${shop}`,
    shop,
    state: 'state',
    isOnline: false,
    accessToken: `shpat_${randomBytes(16).toString('hex')}`,
    scope: 'read_products',
  });
  const sqlite = new SQLiteSessionStorage(join(dir, 'shopify.db'));
  await sqlite.storeSession(session);
  const calls = quick ? 2_000 : 10_000;
  // Wall µs and CPU µs (all threads: Shopify's sqlite3 reads on the libuv pool) per sequential load.
  const perCall = (fn) => async () => {
    const t0 = performance.now();
    const c0 = cpuNow();
    for (let i = 0; i < calls; i++) await fn();
    return { wall: ((performance.now() - t0) * 1000) / calls, cpu: (cpuNow() - c0) / calls };
  };
  const sides = {
    kit: perCall(async () => {
      if ((await kit.installations.get(storeId))?.storeId !== storeId) throw new Error('kit');
    }),
    shopify: perCall(async () => {
      if ((await sqlite.loadSession(session.id))?.shop !== shop) throw new Error('shopify');
    }),
  };
  for (const s of Object.values(sides)) await s();
  const r = await rounds(ROUNDS, sides);
  const wall = (k) => r.all[k].map((x) => x.wall);
  const cpu = (k) => r.all[k].map((x) => x.cpu);
  row(
    'token load incl. decryption, kit.installations.get (µs, wall) vs Shopify SQLite loadSession',
    median(wall('kit')),
    median(wall('shopify')),
    median(wall('kit')) / median(wall('shopify')),
    median(wall('kit').map((x, i) => x / wall('shopify')[i])),
    '<=1.0',
    'µs',
  );
  row(
    '  same, CPU µs per load (all threads)',
    median(cpu('kit')),
    median(cpu('shopify')),
    median(cpu('kit')) / median(cpu('shopify')),
    median(cpu('kit').map((x, i) => x / cpu('shopify')[i])),
    '<=1.0',
    'µs',
  );
  await kit.close();
}

// --- cold start ----------------------------------------------------------------
if (selected('cold-start')) {
  const kitEntry = new URL('../../dist/index.js', import.meta.url).href;
  // Wall time of a fresh node process that imports the entry (what a deploy
  // or a serverless cold start pays), median of interleaved runs.
  const start = (specifiers) => async () => {
    const list = Array.isArray(specifiers) ? specifiers : [specifiers];
    const script = list.map((x) => `await import(${JSON.stringify(x)});`).join('');
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: here,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`importing ${list.join(', ')} failed`);
    return performance.now() - t0;
  };
  // What an app pays before serving: the modules its start imports. The kit's
  // storeApp() loads its HTTP and storage graph and the SQLite driver; a
  // Shopify app on Express loads Express, the API library with its Node
  // adapter and a SQLite session storage. (Module loading only: opening the
  // database and migrating are not in either figure.)
  const kitApp = [
    'express',
    kitEntry,
    new URL('../../dist/kit.js', import.meta.url).href,
    'better-sqlite3',
    'drizzle-orm/better-sqlite3',
    'drizzle-orm/better-sqlite3/migrator',
  ];
  const shopifyApp = [
    'express',
    '@shopify/shopify-api/adapters/node',
    '@shopify/shopify-api',
    '@shopify/shopify-app-session-storage-sqlite',
  ];
  const sides = {
    kit: start(kitEntry),
    shopify: start('@shopify/shopify-api'),
    node: start('node:os'),
    kitApp: start(kitApp),
    shopifyApp: start(shopifyApp),
  };
  const r = await rounds(quick ? 5 : 15, sides);
  roundsRow(
    r,
    'cold start of the main entry (ms, process wall time) vs @shopify/shopify-api',
    'kit',
    'shopify',
    '<=0.9',
    'ms',
  );
  roundsRow(
    r,
    '  app start imports (ms): express + kit + what storeApp() loads for SQLite vs express + shopify-api + its SQLite session storage',
    'kitApp',
    'shopifyApp',
    '(none)',
    'ms',
  );
  report('  cold start detail', {
    node_alone_ms: r.median('node'),
    kit_import_ms: r.median('kit') - r.median('node'),
    shopify_import_ms: r.median('shopify') - r.median('node'),
    kit_app_imports_ms: r.median('kitApp') - r.median('node'),
    shopify_app_imports_ms: r.median('shopifyApp') - r.median('node'),
  });
}

rmSync(dir, { recursive: true, force: true });

const fmt = (v, unit) =>
  unit === 'µs' || unit === 'ms' ? v.toFixed(1) : Math.round(v).toLocaleString('en-US');
console.log('\n| figure | kit | peer | ratio (medians) | paired | target |');
console.log('|---|---|---|---|---|---|');
for (const t of table) {
  console.log(
    `| ${t.figure} | ${fmt(t.kit, t.unit)} ${t.unit} | ${fmt(t.peer, t.unit)} ${t.unit} | ${t.ratio.toFixed(2)} | ${t.paired.toFixed(2)} | ${t.target} |`,
  );
}
