// Profiles one side of the peer bench under load: starts bench/peers/server.js
// (that side alone, as the bench runs it), warms it up, then takes a CPU
// profile of the server (inspector, the serving only: not the installs before
// it) while bench/tools/socket-load.js loads it, and leaves
// <dir>/<side>.cpuprofile (summarise it with bench/tools/profile-summary.js).
//   node bench/tools/profile-http.js <kit-route|bare-route|shopify-route|kit-webhook|peer-webhook> <dir> [seconds] [connections]
// BENCH_STORES (default 1000): stores, a session token each, named round robin.
// BENCH_PROFILE=heap: an allocation sampling profile instead (<side>.heapprofile,
// garbage included; summarise with bench/tools/heap-summary.js).
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signedDelivery } from '../lib.js';
import { requestBytes, socketLoad } from './socket-load.js';

const [target, dir, seconds = '10', connections = '50'] = process.argv.slice(2);
if (!target || !dir) {
  console.error('usage: node bench/tools/profile-http.js <side> <dir> [seconds] [connections]');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const [side, kind] = target.split('-');
const serverSide = kind === 'webhook' && side === 'peer' ? 'webhook' : side;
const stores = process.env.BENCH_STORES ?? '1000';
// Tokens for the bare side come from a kit started apart (bare Express reads none).
const start = (s) => {
  const child = fork(join(here, '..', 'peers', 'server.js'), [], {
    env: { ...process.env, BENCH_WEBHOOK_SECRET: secret, BENCH_SIDES: s, BENCH_STORES: stores },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve) => child.once('message', (info) => resolve({ child, info })));
};
const { child: server, info } = await start(serverSide);
const tokenSource =
  (side === 'bare' || side === 'honoBare') && kind === 'route'
    ? await start('kit')
    : { info, child: undefined };
const url = `${info.urls[serverSide]}${kind === 'webhook' ? '/webhooks' : '/api/data'}`;
const key = Buffer.from(secret.slice(6), 'base64');
let next;
if (kind === 'webhook') {
  next = () => {
    const d = signedDelivery(key, { type: 'orders.create', data: { store_id: 'st_bench' } });
    return requestBytes(url, { method: 'POST', headers: d.headers, body: d.body });
  };
} else {
  const tokens =
    side === 'shopify' ? info.shopifyTokens : (tokenSource.info.kitTokens ?? info.kitTokens);
  const requests = tokens.map((t) =>
    requestBytes(url, { headers: { authorization: `Bearer ${t}`, accept: 'application/json' } }),
  );
  let i = 0;
  next = () => requests[i++ % requests.length];
}
const ask = (what, key) =>
  new Promise((resolve) => {
    const on = (m) => {
      if (m && key in m) {
        server.off('message', on);
        resolve(m[key]);
      }
    };
    server.on('message', on);
    server.send(what);
  });
// A warm-up (every token seen once, JIT settled), then the profiled load.
await socketLoad(url, { seconds: 2, connections: Number(connections), next });
await ask('profileStart', 'profileStart');
const r = await socketLoad(url, {
  seconds: Number(seconds),
  connections: Number(connections),
  next,
});
mkdirSync(dir, { recursive: true });
const ext = process.env.BENCH_PROFILE === 'heap' ? 'heapprofile' : 'cpuprofile';
await ask({ profileStop: join(dir, `${target}.${ext}`) }, 'profileStop');
console.log(
  target,
  r.requests,
  'requests,',
  Math.round(r.rps),
  'req/s',
  JSON.stringify(r.statuses),
  `${r.bytes} B/response`,
);
server.send('close');
tokenSource.child?.send('close');
