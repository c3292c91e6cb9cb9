#!/usr/bin/env node
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import http, { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
// A/B of the Express path against another build of the kit, in one process, rounds interleaved:
//   git archive <base> | tar -x -C /tmp/base && ln -s "$PWD/node_modules" /tmp/base/node_modules \
//     && (cd /tmp/base && npx tsc -p tsconfig.build.json) && npm run build \
//     && node bench/tools/ab-express-path.mjs /tmp/base
// Measures install begin, a refused install callback and webhook deliveries; prints medians and
// branch/base ratios (issue 26: the install routes and the receiver moved onto the core).
import express from 'express';

const BASE = resolve(process.argv[2] ?? '');
const HERE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
if (!process.argv[2])
  throw new Error('usage: node bench/tools/ab-express-path.mjs <base checkout with dist/>');

async function installPath() {
  const STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
  async function start(root) {
    const { storeApp } = await import(`${root}/dist/store-app.js`);
    const { generateKey } = await import(`${root}/dist/crypto/index.js`);
    const app = express();
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const appUrl = `http://127.0.0.1:${server.address().port}`;
    const kit = await storeApp({
      appUrl,
      environment: 'test',
      oauth: {
        clientId: 'app_1',
        clientSecret: 'secret-0123456789',
        scopes: ['read_products'],
        authUrl: 'https://auth.example.com',
      },
      storage: { databaseUrl: ':memory:', encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: `whsec_${Buffer.alloc(32, 7).toString('base64')}` },
      logger: { level: 'silent' },
    });
    app.use(kit.middleware());
    return { appUrl, server, kit };
  }
  async function round(appUrl, path, n) {
    const times = [];
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      const r = await fetch(appUrl + path, { redirect: 'manual' });
      await r.arrayBuffer();
      times.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(n / 2)];
  }
  const base = await start(BASE);
  const mine = await start(HERE);
  for (const [label, path] of [
    ['begin', `/auth?store_id=${STORE}`],
    ['callback refused', '/auth/callback?code=x&state=y'],
  ]) {
    const b = [],
      m = [];
    for (let k = 0; k < 2; k++) {
      await round(base.appUrl, path, 200);
      await round(mine.appUrl, path, 200);
    }
    for (let k = 0; k < 7; k++) {
      b.push(await round(base.appUrl, path, 400));
      m.push(await round(mine.appUrl, path, 400));
    }
    const med = (a) => [...a].sort((x, y) => x - y)[3];
    console.log(
      `${label}: base median ${med(b).toFixed(0)} µs, branch ${med(m).toFixed(0)} µs, ratio ${(med(m) / med(b)).toFixed(3)}  (rounds base ${b.map((x) => x.toFixed(0))} / branch ${m.map((x) => x.toFixed(0))})`,
    );
  }
  for (const s of [base, mine]) {
    s.server.closeAllConnections();
    s.server.close();
    await s.kit.close();
  }
}

async function webhooks() {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const key = Buffer.from(secret.slice(6), 'base64');
  const dir = mkdtempSync(join(tmpdir(), 'i26a-wh-'));
  async function start(root, name) {
    const { createStorage } = await import(`${root}/dist/storage/index.js`);
    const { createWebhooks, resolveWebhookOptions } = await import(
      `${root}/dist/webhooks/index.js`
    );
    const storage = await createStorage({
      databaseUrl: join(dir, `${name}.db`),
      encryptionKeys: [randomBytes(32).toString('base64url')],
    });
    const wh = createWebhooks({
      storage,
      options: resolveWebhookOptions({ secrets: [secret] }, {}),
      purge: async () => ({}),
    });
    wh.api.on('test.ping', () => {});
    const app = express();
    // Builds before issue 31 had an Express receiver; after it, the pipeline runs
    // through the Express shell's adapter.
    if (wh.receiver) app.all('/webhooks', wh.receiver);
    else {
      const { expressHandler } = await import(`${root}/dist/shells/express/handler.js`);
      const { SILENT } = await import(`${root}/dist/shells/express/adapter.js`);
      app.all('/webhooks', expressHandler(wh.handler, SILENT));
    }
    const server = http.createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { port: server.address().port, server, storage };
  }
  function delivery() {
    const id = `msg_${randomUUID()}`;
    const ts = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: 'test.ping', data: { n: id } });
    const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(ts),
        'webhook-signature': `v1,${sig}`,
        'content-length': Buffer.byteLength(body),
      },
    };
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  function post(port) {
    const d = delivery();
    return new Promise((resolve, reject) => {
      const r = http.request(
        { host: '127.0.0.1', port, path: '/webhooks', method: 'POST', headers: d.headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        },
      );
      r.on('error', reject);
      r.end(d.body);
    });
  }
  async function round(port, ms) {
    let n = 0;
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < end) {
          const s = await post(port);
          if (s !== 200) throw new Error(`status ${s}`);
          n++;
        }
      }),
    );
    return (n * 1000) / ms;
  }
  const base = await start(BASE, 'base');
  const mine = await start(HERE, 'mine');
  await round(base.port, 1000);
  await round(mine.port, 1000);
  const b = [],
    m = [];
  for (let k = 0; k < 7; k++) {
    if (k % 2) {
      b.push(await round(base.port, 2000));
      m.push(await round(mine.port, 2000));
    } else {
      m.push(await round(mine.port, 2000));
      b.push(await round(base.port, 2000));
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[3];
  console.log(
    `webhook deliveries/s: base ${med(b).toFixed(0)}, branch ${med(m).toFixed(0)}, ratio ${(med(m) / med(b)).toFixed(3)} (rounds base ${b.map((x) => x.toFixed(0))} / branch ${m.map((x) => x.toFixed(0))})`,
  );
  for (const s of [base, mine]) {
    s.server.closeAllConnections();
    s.server.close();
    await s.storage.close();
  }
  agent.destroy();
}

await installPath();
await webhooks();
