// The platform's auth side under load: the bearer guard in front of /api/v1 and
// the session check, each against a bare Express handler returning the same
// JSON from memory (measured in the same run), plus refresh-grant throughput.
// Run: npm run build && node bench/suites/platform-auth.js
import express from 'express';
import { startPlatform } from '../../dist/platform/index.js';
import { compare, issueTokens, listen, report, strictRps } from '../lib.js';

const SECONDS = 2;
const ROUNDS = 3;
const CONCURRENCY = 16;

const platform = await startPlatform({ rateLimit: { perMinute: null, concurrent: 100_000 } });
const redirectUri = 'http://127.0.0.1:9/auth/callback';
const app = platform.registerApp({
  name: 'bench',
  redirectUri,
  webhookUrl: 'http://127.0.0.1:9/webhooks',
  scopes: ['read_products', 'read_store_settings'],
});
const { storeId } = platform.createStore({ name: 'Bench store' });

function tokens() {
  return issueTokens(platform, {
    app,
    storeId,
    redirectUri,
    scopes: ['read_products', 'read_store_settings'],
  });
}

const t = await tokens();
const auth = { authorization: `Bearer ${t.access_token}`, 'x-store-id': storeId };

// Baseline: bare Express returning the same JSON bodies from memory.
const storeBody = await (
  await fetch(`${platform.apiUrl}/stores/current`, { headers: auth })
).json();
const sessionBody = await (
  await fetch(`${platform.authUrl}/oauth/session`, { headers: auth })
).json();
const bare = express();
bare.get('/store', (_req, res) => res.json(storeBody));
bare.get('/session', (_req, res) => res.json(sessionBody));
const { server, url: bareUrl } = await listen(bare);

const rps = (url, headers) =>
  strictRps(url, { seconds: SECONDS, concurrency: CONCURRENCY, headers });

const api = await compare(
  ROUNDS,
  rps(`${platform.apiUrl}/stores/current`, auth),
  rps(`${bareUrl}/store`, {}),
);
report('GET /api/v1/stores/current (guard + rate limit + handler) vs bare Express', {
  platform_rps: Math.round(api.a),
  bare_rps: Math.round(api.b),
  ratio: api.ratio,
});

const session = await compare(
  ROUNDS,
  rps(`${platform.authUrl}/oauth/session`, auth),
  rps(`${bareUrl}/session`, {}),
);
report('GET /oauth/session vs bare Express', {
  platform_rps: Math.round(session.a),
  bare_rps: Math.round(session.b),
  ratio: session.ratio,
});

// Refresh grant, sequential: each call rotates the refresh token.
let refreshToken = t.refresh_token;
let n = 0;
const end = performance.now() + SECONDS * 1000;
const t0 = performance.now();
while (performance.now() < end) {
  const res = await fetch(`${platform.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'refresh_token',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      refresh_token: refreshToken,
    }),
  });
  if (res.status !== 200) throw new Error(`refresh failed: ${res.status}`);
  refreshToken = (await res.json()).refresh_token;
  n++;
}
report('POST /oauth/token refresh_token (sequential, rotating)', {
  per_second: Math.round(n / ((performance.now() - t0) / 1000)),
});

server.close();
await platform.close();
