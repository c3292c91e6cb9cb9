// One app instance of the scale bench (bench/suites/scale.js), on the shared
// database. Plain ESM against dist/. Roles (SAK_SCALE_WORKER.role):
//   'app'      the kit as an app builds it (storeApp(), default options apart
//              from logging): reports its start-up time, then on request makes
//              one API call per store it is sent (a one-product page), reports heap/RSS after a
//              full GC, and purges a burst of stores (kit.purge).
//   'refresh'  the kit's token manager with default options (as storeApp()
//              builds it): on request runs sweep passes until nothing is due
//              and reports their results.
// Talks to the parent over IPC only.
import { performance } from 'node:perf_hooks';

const config = JSON.parse(process.env.SAK_SCALE_WORKER ?? '{}');
const CALL_CONCURRENCY = 32;
const PURGE_CONCURRENCY = 16;

async function pool(items, concurrency, fn) {
  let next = 0;
  let failed = 0;
  let firstError;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (err) {
        failed++;
        firstError ??= `${err?.code ?? ''} ${err?.message ?? err}`;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return { failed, firstError };
}

function memory() {
  global.gc?.();
  global.gc?.();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss };
}

/**
 * Heap bytes of one cached store in each per-store structure, measured over
 * `n` stores after a full GC (no database: the installations are what the
 * storage would hand back, the platform answers from a stub fetch).
 */
async function perStoreCost(n) {
  const [{ createTokenManager }, { resolveRefreshOptions }, factory, clientOptions, sessions] =
    await Promise.all([
      import('../../dist/refresh/manager.js'),
      import('../../dist/refresh/options.js'),
      import('../../dist/client/factory.js'),
      import('../../dist/client/options.js'),
      import('../../dist/authenticated/session-token.js'),
    ]);
  const { randomBytes } = await import('node:crypto');
  const token = (p) => `${p}_${randomBytes(32).toString('base64url')}`;
  const ids = Array.from({ length: n }, (_, i) => `st_${i.toString(36).padStart(12, '0')}`);
  const tokens = createTokenManager({
    installations: {
      // A fresh object per read, as the storage decrypts one.
      get: async (storeId) => ({
        storeId,
        scopes: ['read_products', 'write_products', 'read_orders'],
        accessToken: token('at'),
        refreshToken: token('rt'),
        accessTokenExpiresAt: new Date(Date.now() + 86_400_000),
        installedAt: new Date(),
        updatedAt: new Date(),
        version: 1,
        needsReauth: false,
        platformInstalledAt: new Date(),
      }),
    },
    options: resolveRefreshOptions({
      sweepIntervalMs: 0,
      cacheMaxStores: n,
      cacheTtlMs: 3_600_000,
    }),
    refresh: async () => {
      throw new Error('not in this measurement');
    },
  });
  const stub = async () =>
    new Response('{"data":[],"pagination":{"hasMore":false,"nextCursor":null}}', {
      status: 200,
      headers: {
        'content-type': 'application/json',
        'x-ratelimit-limit': '1000',
        'x-ratelimit-remaining': '999',
        'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 30),
        date: new Date().toUTCString(),
      },
    });
  const clients = factory.createClientFactory({
    options: clientOptions.resolveClientOptions({
      baseUrl: 'http://127.0.0.1:9/api/v1',
      fetch: stub,
      cacheMaxStores: n,
    }),
    tokens,
  });
  const issuer = sessions.createSessionTokens({
    secrets: [randomBytes(32).toString('base64url')],
    clientId: 'scale',
    issuer: 'http://127.0.0.1:9',
    ttlSeconds: 300,
    clockToleranceSeconds: 5,
    rememberedTokens: n,
  });
  await issuer.verifySession((await issuer.mint('st_warm', { installedAt: Date.now() })).token);
  // Several collections with time between them: fetch's responses and WebCrypto's
  // keys are freed by finalizers, which a single gc() leaves for later.
  const heap = async () => {
    for (let i = 0; i < 8; i++) {
      global.gc?.();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return process.memoryUsage().heapUsed;
  };
  const h0 = await heap();
  for (const id of ids) await tokens.getInstallation(id);
  const h1 = await heap();
  for (const id of ids) clients.forStore(id);
  const h2 = await heap();
  // One call each: the store's rate-limit gate now exists and knows its window.
  for (const id of ids) await clients.forStore(id).products.list({ limit: 1 });
  const h3 = await heap();
  for (const id of ids)
    await issuer.verifySession((await issuer.mint(id, { installedAt: Date.now() })).token);
  const h4 = await heap();
  return {
    n,
    installation: (h1 - h0) / n,
    client: (h2 - h1) / n,
    gate: (h3 - h2) / n,
    sessionToken: (h4 - h3) / n,
    cachedStores: ids.filter((id) => tokens.cachedInstallation(id)).length,
    gates: clients.limiter.size,
  };
}

if (config.role === 'cost') {
  process.send({ cost: await perStoreCost(config.n ?? 5_000) });
  process.exit(0);
} else if (config.role === 'app') {
  const { storeApp } = await import('../../dist/index.js');
  const t0 = performance.now();
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
    // Its own background sweep off: the refresh figures count only the instances measured.
    refresh: { sweepIntervalMs: 0 },
    logger: { level: 'silent' },
  });
  // What an app does before it serves: build its middleware.
  kit.middleware();
  const startupMs = performance.now() - t0;
  process.on('message', async (m) => {
    if (m.cmd === 'memory') {
      process.send({ memory: memory() });
    } else if (m.cmd === 'call') {
      const { failed, firstError } = await pool(m.ids, CALL_CONCURRENCY, (id) =>
        kit.client(id).products.list({ limit: 1 }),
      );
      process.send({ called: m.ids.length, failed, firstError });
    } else if (m.cmd === 'purge') {
      const t = performance.now();
      const { failed, firstError } = await pool(m.ids, PURGE_CONCURRENCY, (id) => kit.purge(id));
      process.send({ purged: m.ids.length, failed, firstError, ms: performance.now() - t });
    } else if (m.cmd === 'close') {
      await kit.close();
      process.exit(0);
    }
  });
  process.send({ ready: true, startupMs, processMs: performance.now(), memory: memory() });
} else {
  const [{ createStorage }, { createTokenManager }, { resolveRefreshOptions }, { requestToken }] =
    await Promise.all([
      import('../../dist/storage/index.js'),
      import('../../dist/refresh/manager.js'),
      import('../../dist/refresh/options.js'),
      import('../../dist/oauth/token-endpoint.js'),
    ]);
  const storage = await createStorage({
    databaseUrl: config.databaseUrl,
    encryptionKeys: [config.encryptionKey],
    migrate: false,
  });
  const endpoint = {
    url: `${config.authUrl}/oauth/token`,
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    encoding: 'json',
  };
  // The defaults, as storeApp() resolves them (the interval is ours: the parent starts passes).
  // Why refreshes failed, by error code (the suite prints them; no store ids, no messages).
  const failures = {};
  const attempts = { calls: 0, failed: {} };
  const count = (obj) => {
    const code = obj?.code ?? 'unknown';
    failures[code] = (failures[code] ?? 0) + 1;
  };
  const tokens = createTokenManager({
    installations: storage.installations,
    // Every level the manager logs at (a missing one would throw inside each refresh).
    logger: { debug() {}, info() {}, warn: count, error: count },
    options: resolveRefreshOptions({ sweepIntervalMs: 0 }),
    // Every attempt and every failed attempt by code (a retried attempt that reached the
    // platform is a second refresh call there: the suite compares calls with tokens).
    refresh: async (rt, signal) => {
      attempts.calls++;
      try {
        return await requestToken(
          endpoint,
          { grant_type: 'refresh_token', refresh_token: rt },
          { signal },
        );
      } catch (err) {
        const code = `${err?.code ?? 'unknown'}${err?.retryAfterMs !== undefined ? '+retry-after' : ''}`;
        attempts.failed[code] = (attempts.failed[code] ?? 0) + 1;
        throw err;
      }
    },
  });
  process.on('message', async (m) => {
    if (m.cmd === 'sweep') {
      const t = performance.now();
      const cpu0 = process.cpuUsage();
      const total = { passes: 0, checked: 0, refreshed: 0, failed: 0, leaseLost: 0 };
      // Passes until one finds nothing due (the background sweep would run them a minute apart).
      for (;;) {
        let r;
        try {
          r = await tokens.sweep();
        } catch (err) {
          // A pass that failed as a whole (storage busy or timed out): the background sweep
          // would log it and try again at the next interval; so does this loop, counting it.
          count(err);
          r = { checked: 1, refreshed: 0, failed: 0, leaseLost: 0 };
        }
        total.passes++;
        for (const k of ['checked', 'refreshed', 'failed', 'leaseLost']) total[k] += r[k];
        if (r.checked === 0 || total.passes >= 20) break;
        // Stores other instances hold the lease of stay due until they commit: look again
        // shortly (the background sweep would look a minute later).
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const cpu = process.cpuUsage(cpu0);
      process.send({
        swept: total,
        failures,
        attempts,
        ms: performance.now() - t,
        cpuS: (cpu.user + cpu.system) / 1e6,
        memory: memory(),
      });
    } else if (m.cmd === 'close') {
      await storage.close();
      process.exit(0);
    }
  });
  process.send({ ready: true });
}
