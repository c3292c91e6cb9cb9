// Profiles one side of the peer bench under load: starts bench/peers/server.js
// with `node --cpu-prof`, loads one of its routes, and leaves the .cpuprofile in
// the given folder (summarise it with bench/tools/profile-summary.js).
//   node bench/tools/profile-http.js <kit-route|bare-route|shopify-route|kit-webhook|peer-webhook> <dir> [seconds]
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, signedDelivery } from '../lib.js';

const [target, dir, seconds = '10'] = process.argv.slice(2);
if (!target || !dir) {
  console.error('usage: node bench/tools/profile-http.js <side> <dir> [seconds]');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const server = fork(join(here, '..', 'peers', 'server.js'), [], {
  // The Shopify side only when profiling it (its packages: `npm run bench:peers`).
  env: {
    ...process.env,
    BENCH_WEBHOOK_SECRET: secret,
    ...(target.startsWith('shopify') ? {} : { BENCH_WITHOUT_SHOPIFY: '1' }),
  },
  execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const info = await new Promise((resolve) => server.once('message', resolve));
const key = Buffer.from(secret.slice(6), 'base64');
const delivery = () =>
  signedDelivery(key, { type: 'orders.create', data: { store_id: 'st_bench' } });
const [side, kind] = target.split('-');
const options =
  kind === 'webhook'
    ? {
        url: `${side === 'kit' ? info.urls.kit : info.urls.webhook}/webhooks`,
        method: 'POST',
        concurrency: 50,
        perRequest: delivery,
      }
    : {
        url: `${info.urls[side]}/api/data`,
        concurrency: 16,
        headers: {
          authorization: `Bearer ${side === 'shopify' ? info.shopifyToken : info.kitToken}`,
        },
      };
const r = await load(options.url, { ...options, seconds: Number(seconds) });
console.log(target, Math.round(r.rps), 'req/s', JSON.stringify(r.statuses));
server.send('close');
