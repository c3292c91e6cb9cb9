// The local platform's refresh grant alone, no HTTP: N stores installed
// (`issueForInstalls`, 1,000 per transaction), then one refresh per store
// through the token service, timed in fifths. Shows a cost per refresh that
// grows with the database (issue 33: the in-memory SQLite's page-cache walk).
//   npm run build && node bench/tools/platform-refresh-grant.js [N=100000]
import { createAppRegistry } from '../../dist/platform/apps.js';
import { createTokenService } from '../../dist/platform/auth/tokens.js';
import { createClock } from '../../dist/platform/clock.js';
import { openPlatformDb } from '../../dist/platform/db/open.js';
import { resolvePlatformOptions } from '../../dist/platform/options.js';
import { createStoreDirectory } from '../../dist/platform/stores.js';

const N = Number(process.argv[2] ?? 100_000);
const { db, sqlite, close } = openPlatformDb();
const clock = createClock();
const apps = createAppRegistry(db);
const tokens = createTokenService({ db, clock, apps, options: resolvePlatformOptions({}) });
const stores = createStoreDirectory({ db, clock });
const app = apps.register({
  name: 'grant',
  redirectUri: 'http://127.0.0.1:9/cb',
  webhookUrl: 'http://127.0.0.1:9/w',
  scopes: ['read_products'],
});
const ids = [];
for (let i = 0; i < N; i++) ids.push(stores.create({ seed: false }).storeId);
const refreshTokens = [];
for (let i = 0; i < N; i += 1000) {
  const issued = tokens.issueForInstalls({
    appId: app.appId,
    storeIds: ids.slice(i, i + 1000),
    scopes: ['read_products'],
  });
  for (const t of issued) refreshTokens.push(t.refreshToken);
}
console.log(
  `${N} stores; ${sqlite.pragma('page_count', { simple: true })} pages of ${sqlite.pragma('page_size', { simple: true })} bytes`,
);
const step = Math.max(1, Math.floor(N / 5));
let t = performance.now();
for (let i = 0; i < N; i++) {
  const r = tokens.refresh({ refreshToken: refreshTokens[i], appId: app.appId });
  if (!r.ok) throw new Error(r.reason);
  if ((i + 1) % step === 0) {
    const now = performance.now();
    console.log(
      `refreshes ${i + 1 - step + 1}–${i + 1}: ${(((now - t) / step) * 1000).toFixed(1)} µs each`,
    );
    t = now;
  }
}
close();
