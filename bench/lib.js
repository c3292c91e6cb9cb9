// Small shared helpers for the suites: a closed-loop HTTP load generator over
// keep-alive sockets, medians, and a uniform way to print figures.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';

/**
 * Sends `concurrency` parallel request loops at `url` for `seconds`.
 * `perRequest()`, when given, returns `{ headers, body }` for each request
 * (fresh webhook ids). Returns { requests, rps, errors, statuses, p50, p99 }
 * (latencies in ms).
 */
export async function load(
  url,
  { seconds = 5, concurrency = 16, headers = {}, method = 'GET', body, perRequest } = {},
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const u = new URL(url);
  const latencies = [];
  const statuses = {};
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  async function one() {
    const fresh = perRequest?.();
    const sendHeaders = fresh ? { ...headers, ...fresh.headers } : headers;
    const sendBody = fresh ? fresh.body : body;
    return new Promise((resolve) => {
      const t0 = performance.now();
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method,
          headers: sendHeaders,
          agent,
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - t0);
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      if (sendBody) req.end(sendBody);
      else req.end();
    });
  }
  async function loop() {
    while (performance.now() < end) await one();
  }
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
  return {
    requests: latencies.length,
    rps: latencies.length / elapsed,
    errors,
    statuses,
    p50: pct(0.5),
    p99: pct(0.99),
  };
}

/**
 * CPU time (µs, user + system) a forked `bench/peers/server.js` has used so far: it answers
 * the 'cpu' message with its own `process.cpuUsage()`.
 */
export function childCpu(child) {
  return new Promise((resolve) => {
    const on = (m) => {
      if (m?.cpu !== undefined) {
        child.off('message', on);
        resolve(m.cpu);
      }
    };
    child.on('message', on);
    child.send('cpu');
  });
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * Interleaves rounds of `a` and `b` so machine noise hits both alike; returns
 * medians, their ratio, and the median of each round's own a/b ratio (paired:
 * robust to the machine's load drifting over the run).
 */
export async function compare(rounds, a, b) {
  const ra = [];
  const rb = [];
  for (let i = 0; i < rounds; i++) {
    ra.push(await a());
    rb.push(await b());
  }
  return {
    a: median(ra),
    b: median(rb),
    ratio: median(ra) / median(rb),
    pairedRatio: median(ra.map((x, i) => x / rb[i])),
  };
}

export function report(name, figures) {
  const parts = Object.entries(figures).map(
    ([k, v]) => `${k}=${typeof v === 'number' ? (Number.isInteger(v) ? v : v.toFixed(3)) : v}`,
  );
  console.log(`${name}: ${parts.join('  ')}`);
}

/**
 * Installs `app` into `storeId` on a local platform the way an app would
 * (authorize with PKCE, approve, code exchange) and returns the token response.
 */
export async function issueTokens(platform, { app, storeId, redirectUri, scopes }) {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(`${platform.authUrl}/oauth/authorize`);
  const params = {
    client_id: app.clientId,
    redirect_uri: redirectUri,
    scope: scopes.join(','),
    state: 'bench',
    response_type: 'code',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const code = new URL(
    platform.approveInstall({ authorizeUrl: url.toString(), storeId }),
  ).searchParams.get('code');
  const res = await fetch(`${platform.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
  });
  if (!res.ok) throw new Error(`token exchange failed: ${res.status}`);
  return res.json();
}

/** Listens on a free loopback port; resolves to `{ server, url }`. */
export async function listen(app) {
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

/**
 * A measurement for `compare`: requests/s of `url` under `load`, refusing to
 * report a figure when any request failed or answered other than 200.
 */
export function strictRps(url, options) {
  return async () => {
    const r = await load(url, options);
    if (r.errors || Object.keys(r.statuses).some((s) => s !== '200')) {
      throw new Error(
        `unexpected responses from ${url}: ${JSON.stringify(r.statuses)} errors=${r.errors}`,
      );
    }
    return r.rps;
  };
}

/**
 * A Standard Webhooks delivery of `payload` with a fresh id, signed with `key`
 * (the secret's bytes): what a platform sends, for receiver benches.
 */
export function signedDelivery(key, payload) {
  const id = `msg_${randomBytes(12).toString('base64url')}`;
  const ts = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ ...payload, id });
  const mac = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,${mac}`,
    },
  };
}

/** Where bench apps say the merchant returns (never called: the bench approves installs directly). */
export const BENCH_REDIRECT_URI = 'http://127.0.0.1:9/auth/callback';

/**
 * Registers a bench app on a local platform. Returns `{ app, endpoint }`;
 * `endpoint` is the token endpoint as the kit's refresh calls it.
 */
export function registerBenchApp(platform, name, { rateLimit, scopes = ['read_products'] } = {}) {
  const app = platform.registerApp({
    name,
    redirectUri: BENCH_REDIRECT_URI,
    webhookUrl: 'http://127.0.0.1:9/webhooks',
    scopes,
    ...(rateLimit ? { rateLimit } : {}),
  });
  const endpoint = {
    url: `${platform.authUrl}/oauth/token`,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    encoding: 'json',
  };
  return { app, endpoint };
}

/**
 * Creates a store (`seed` products) on the platform, installs `app` into it
 * through the OAuth flow and keeps the installation in `storage` (a kit
 * Storage). Returns the store id.
 */
export async function installStore(
  platform,
  storage,
  app,
  { seed = 1, redirectUri = BENCH_REDIRECT_URI, scopes = ['read_products'] } = {},
) {
  const { storeId } = platform.createStore({ seed });
  await saveInstall(
    storage,
    storeId,
    await issueTokens(platform, { app, storeId, redirectUri, scopes }),
  );
  return storeId;
}

/** Stores the token endpoint's answer `t` for `storeId` as the kit's install does. */
export async function saveInstall(storage, storeId, t) {
  await storage.installations.upsert(storeId, {
    scopes: t.scope.split(/[ ,]/),
    accessToken: t.access_token,
    refreshToken: t.refresh_token,
    accessTokenExpiresAt: new Date(Date.now() + t.expires_in * 1000),
  });
}

/**
 * The kit's token manager (no background sweep) and client factory for one
 * app over `storage`, refreshing at `endpoint`. Imported from dist/ on first
 * use, so suites that do not need them load none of it.
 */
export async function clientRuntime({ platform, storage, endpoint, clientOptions = {} }) {
  const [manager, refreshOptions, factory, clientOpts, tokenEndpoint] = await Promise.all([
    import('../dist/refresh/manager.js'),
    import('../dist/refresh/options.js'),
    import('../dist/client/factory.js'),
    import('../dist/client/options.js'),
    import('../dist/oauth/token-endpoint.js'),
  ]);
  const tokens = manager.createTokenManager({
    installations: storage.installations,
    options: refreshOptions.resolveRefreshOptions({ sweepIntervalMs: 0 }),
    refresh: (rt, signal) =>
      tokenEndpoint.requestToken(
        endpoint,
        { grant_type: 'refresh_token', refresh_token: rt },
        { signal },
      ),
  });
  const clients = factory.createClientFactory({
    options: clientOpts.resolveClientOptions({ baseUrl: platform.apiUrl, ...clientOptions }),
    tokens,
  });
  return { tokens, clients };
}
