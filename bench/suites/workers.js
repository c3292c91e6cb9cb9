// The kit in workerd (Cloudflare's runtime, through Miniflare) against a bare Hono Worker,
// same Miniflare, same run, the cases interleaved round by round so machine noise hits
// both alike. Both Workers are bundled as wrangler bundles them (esbuild, the `workerd`
// conditions, no nodejs_compat) and serve `GET /api/products`, which calls the local
// platform's product list (one upstream request, over a real socket):
// - kit: `createWorker` + `d1Adapter` (D1 on disk, migrated and the store installed once
//   before the rounds), the route behind `hono.authenticated()` (app session token) after
//   `hono.middleware()` (store-app-kit/hono, as the workers template mounts it);
// - bare: Hono with the platform access token as a binding, the same upstream call (and
//   the same D1 binding, unused).
// Each round starts a fresh Miniflare (a new workerd process) per case and measures
// (a) start: `new Miniflare` until ready (workerd up, the bundle loaded),
// (b) cold request: the isolate's first request (the kit builds itself there: settings,
//     keys, the D1 migration check, then the authenticated call),
// (c) warm request: median of WARM sequential requests after it.
// BENCH_ROUNDS (default 7), BENCH_WARM (default 50).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { generateKey } from '../../dist/crypto/index.js';
import { startPlatform } from '../../dist/platform/index.js';
import { issueTokens, median, report } from '../lib.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARM = Number(process.env.BENCH_WARM ?? 50);

const KIT_WORKER = `
  import { Hono } from 'hono';
  import { storeAppHono } from './dist/hono.js';
  import { createWorker } from './dist/workers/index.js';
  import { d1Adapter } from './dist/storage/d1/index.js';

  const apps = new WeakMap();
  function appFor(kit) {
    // As the workers template mounts the kit (store-app-kit/hono).
    const hono = storeAppHono(kit);
    const app = new Hono();
    app.use('*', hono.middleware());
    app.get('/api/products', hono.authenticated(), async (c) => {
      const page = await c.get('store').client.products.list({ limit: 1 });
      return c.json({ count: page.data.length });
    });
    return app;
  }
  export default createWorker({
    options: (env) => ({
      storage: { adapter: d1Adapter(env.DB, { applyMigrations: true }) },
      authenticated: { sessionTokenTtlSeconds: 3600 },
      logger: { level: 'silent' },
    }),
    fetch(request, env, ctx, kit) {
      let app = apps.get(kit);
      if (!app) apps.set(kit, (app = appFor(kit)));
      return app.fetch(request, env, ctx);
    },
  });
`;

const BARE_WORKER = `
  import { Hono } from 'hono';
  const app = new Hono();
  app.get('/api/products', async (c) => {
    const res = await fetch(c.env.API_URL + '/products?limit=1', {
      headers: { authorization: 'Bearer ' + c.env.ACCESS_TOKEN, 'x-store-id': c.env.STORE_ID },
    });
    if (!res.ok) return c.json({ status: res.status }, 502);
    const page = await res.json();
    return c.json({ count: page.data.length });
  });
  export default app;
`;

async function bundle(contents) {
  const out = await build({
    stdin: { contents, resolveDir: root },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

async function freePort() {
  const { createServer } = await import('node:net');
  const s = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// No per-minute budget: the kit paces its calls as the platform's budget runs low (the bare
// Worker does not), which would measure pacing instead of the request path.
const platform = await startPlatform({
  logger: false,
  rateLimit: { perMinute: null, concurrent: 500 },
});
const port = await freePort();
const appUrl = `http://127.0.0.1:${port}`;
const scopes = ['read_products'];
const creds = platform.registerApp({
  name: 'Workers bench',
  redirectUri: `${appUrl}/auth/callback`,
  webhookUrl: `${appUrl}/webhooks`,
  scopes,
  appUrl,
});
const { storeId } = platform.createStore({ name: 'Bench store', seed: 5 });
const persist = mkdtempSync(join(tmpdir(), 'bench-workers-d1-'));
const kitScript = await bundle(KIT_WORKER);
const bareScript = await bundle(BARE_WORKER);
const kitVars = {
  STORE_APP_URL: appUrl,
  STORE_APP_CLIENT_ID: creds.clientId,
  STORE_APP_CLIENT_SECRET: creds.clientSecret,
  STORE_APP_SCOPES: scopes.join(','),
  STORE_AUTH_URL: platform.authUrl,
  STORE_APP_ENCRYPTION_KEYS: generateKey(),
  STORE_APP_SESSION_SECRET: generateKey(),
  STORE_APP_WEBHOOK_SECRET: creds.webhookSecret,
  NODE_ENV: 'development',
};

function miniflare(kind) {
  return new Miniflare(
    kind === 'kit'
      ? {
          modules: true,
          script: kitScript,
          compatibilityDate: '2025-01-01',
          d1Databases: { DB: 'bench' },
          d1Persist: persist,
          host: '127.0.0.1',
          port,
          bindings: kitVars,
        }
      : {
          modules: true,
          script: bareScript,
          compatibilityDate: '2025-01-01',
          // The same D1 binding (unused): the start compares the scripts, not the bindings.
          d1Databases: { DB: 'bench-bare' },
          d1Persist: persist,
          host: '127.0.0.1',
          port,
          bindings: bare,
        },
  );
}

// Once: the kit Worker migrates D1 and the store installs (as a merchant does), and the
// session gives an app session token valid for the hour; the bare Worker gets an access
// token of the same store from the platform directly (for an app of its own).
let token;
{
  const mf = miniflare('kit');
  await mf.ready;
  const jar = new Map();
  const get = async (url) => {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
  const begin = await get(`${appUrl}/auth?store_id=${storeId}`);
  const done = await get(
    platform.approveInstall({ authorizeUrl: begin.headers.get('location'), storeId }),
  );
  if (done.status !== 302) throw new Error(`install failed: ${done.status}`);
  const swap = await fetch(`${appUrl}/auth/session-token`, {
    headers: {
      accept: 'application/json',
      cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
    },
  });
  ({ token } = await swap.json());
  await mf.dispose();
}
// A second app of the same store: a new token pair for the kit's app would revoke the kit's.
const bareApp = platform.registerApp({
  name: 'Bare Hono bench',
  redirectUri: 'http://127.0.0.1:1/callback',
  webhookUrl: 'http://127.0.0.1:1/webhooks',
  scopes,
});
const tokens = await issueTokens(platform, {
  app: bareApp,
  storeId,
  redirectUri: 'http://127.0.0.1:1/callback',
  scopes,
});
const bare = {
  API_URL: platform.apiUrl,
  ACCESS_TOKEN: tokens.access_token,
  STORE_ID: storeId,
};

async function call(kind) {
  const t0 = performance.now();
  const res = await fetch(`${appUrl}/api/products`, {
    headers: kind === 'kit' ? { authorization: `Bearer ${token}` } : {},
  });
  const body = await res.json();
  const ms = performance.now() - t0;
  if (res.status !== 200 || body.count !== 1) {
    throw new Error(`${kind}: ${res.status} ${JSON.stringify(body)}`);
  }
  return ms;
}

async function round(kind) {
  const t0 = performance.now();
  const mf = miniflare(kind);
  await mf.ready;
  const start = performance.now() - t0;
  try {
    const cold = await call(kind);
    const warm = [];
    for (let i = 0; i < WARM; i++) warm.push(await call(kind));
    if (process.env.BENCH_DEBUG)
      console.log(kind, cold.toFixed(1), warm.map((x) => x.toFixed(0)).join(' '));
    return { start, cold, warm: median(warm) };
  } finally {
    await mf.dispose();
  }
}

const samples = { kit: [], bare: [] };
for (let i = 0; i < ROUNDS; i++) {
  // Alternate which goes first, so neither always follows a workerd shutdown.
  for (const kind of i % 2 ? ['bare', 'kit'] : ['kit', 'bare'])
    samples[kind].push(await round(kind));
}
await platform.close();
rmSync(persist, { recursive: true, force: true });

const pick = (kind, key) => samples[kind].map((s) => s[key]);
const paired = (key) => median(samples.kit.map((s, i) => s[key] / samples.bare[i][key]));
console.log(`workerd (Miniflare), median of ${ROUNDS} rounds, ${WARM} warm requests each`);
for (const key of ['start', 'cold', 'warm']) {
  report(`${key}`, {
    kit_ms: median(pick('kit', key)),
    bare_hono_ms: median(pick('bare', key)),
    ratio: median(pick('kit', key)) / median(pick('bare', key)),
    paired_ratio: paired(key),
  });
}
report('cold minus warm (first-request work)', {
  kit_ms: median(pick('kit', 'cold')) - median(pick('kit', 'warm')),
  bare_hono_ms: median(pick('bare', 'cold')) - median(pick('bare', 'warm')),
});
report('bundle', {
  kit_kb: Math.round(kitScript.length / 1024),
  bare_hono_kb: Math.round(bareScript.length / 1024),
});
