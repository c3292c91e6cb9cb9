import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { sql } from 'drizzle-orm';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  keepRawBody,
  SIGNATURE_MISMATCH,
  TIMESTAMP_OUT_OF_TOLERANCE,
  WebhookVerificationError,
} from '../../src/webhooks/index.js';
import {
  newSecret,
  openTestDb,
  receiverApp,
  signDelivery,
  type TestDb,
  uninstallPayload,
} from './fixtures.js';

const secret = newSecret();
let t: TestDb;

beforeAll(async () => {
  t = await openTestDb('sqlite');
});
afterAll(async () => {
  await t?.close();
});

function post(app: express.Express, d: ReturnType<typeof signDelivery>) {
  return request(app).post('/webhooks').set(d.headers).send(d.body);
}

/**
 * POSTs a delivery's headers over a real socket and lets `send` write its body (in
 * parts, at its pace); resolves with the status.
 */
async function streamDelivery(
  app: express.Express,
  headers: Record<string, string>,
  send: (req: http.ClientRequest) => void,
): Promise<number> {
  const server = app.listen(0);
  try {
    const port = (server.address() as { port: number }).port;
    return await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { port, method: 'POST', path: '/webhooks', headers: { ...headers } },
        (r: http.IncomingMessage) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      send(req);
    });
  } finally {
    server.close();
  }
}

const ping = (extra: object = {}) => ({ type: 'test.ping', nonce: randomUUID(), ...extra });

describe('webhook receiver', () => {
  it('runs the handler for a signed delivery and answers 200 with a typed payload', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    const seen: string[] = [];
    webhooks.on('test.ping', (event) => {
      seen.push(event.id);
    });
    const d = signDelivery(secret, ping());
    const res = await post(app, d);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'processed' });
    expect(seen).toEqual([d.id]);
  });

  it('answers 401 and never runs the handler when the body, id or timestamp is altered', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    let runs = 0;
    webhooks.on('test.ping', () => {
      runs++;
    });
    const d = signDelivery(secret, ping());
    const altered = [
      { ...d, body: d.body.replace('test.ping', 'test.pinh') },
      { ...d, headers: { ...d.headers, 'webhook-id': `${d.id}x` } },
      {
        ...d,
        headers: {
          ...d.headers,
          'webhook-timestamp': String(Number(d.headers['webhook-timestamp']) + 1),
        },
      },
    ];
    for (const a of altered) {
      const res = await post(app, a);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('SIGNATURE_MISMATCH');
    }
    const unsigned = await request(app)
      .post('/webhooks')
      .set({ ...d.headers, 'webhook-signature': '' })
      .send(d.body);
    expect(unsigned.status).toBe(401);
    const stale = signDelivery(secret, ping(), { at: new Date(Date.now() - 10 * 60_000) });
    expect((await post(app, stale)).body.code).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    const future = signDelivery(secret, ping(), { at: new Date(Date.now() + 10 * 60_000) });
    expect((await post(app, future)).status).toBe(401);
    expect(runs).toBe(0);
  });

  it('judges the timestamp once, on arrival: a slow body does not push an admitted delivery out of tolerance', async () => {
    // The receiver's clock, moved by the test: a delivery arrives exactly 300 s
    // (the tolerance) after its timestamp, and its body finishes 5 s later.
    let now = Math.floor(Date.now() / 1000);
    let reads = 0;
    const { app, webhooks } = receiverApp(t.storage, {
      secrets: [secret],
      nowSeconds: () => {
        reads++;
        return now;
      },
    });
    const seen: string[] = [];
    webhooks.on('test.ping', (event) => {
      seen.push(event.id);
    });
    const d = signDelivery(secret, ping(), { at: new Date((now - 300) * 1000) });
    const status = await streamDelivery(app, d.headers, (req) => {
      req.write(d.body.slice(0, 5));
      // Once the headers were judged, the clock moves on; then the rest of the body.
      const finish = setInterval(() => {
        if (reads === 0) return;
        clearInterval(finish);
        now += 5;
        req.end(d.body.slice(5));
      }, 5);
    });
    expect(status).toBe(200);
    expect(seen).toEqual([d.id]);
    // A delivery already 305 s old when it arrives is refused, as it should be.
    const late = await post(
      app,
      signDelivery(secret, ping(), { at: new Date((now - 305) * 1000) }),
    );
    expect(late.status).toBe(401);
    expect(late.body.code).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
  });

  it('accepts deliveries signed with either secret during a rotation', async () => {
    const next = newSecret();
    const { app } = receiverApp(t.storage, { secrets: [next, secret] });
    expect((await post(app, signDelivery(secret, ping()))).status).toBe(200);
    expect((await post(app, signDelivery(next, ping()))).status).toBe(200);
    expect((await post(app, signDelivery(newSecret(), ping()))).status).toBe(401);
  });

  it('answers 405 with Allow for other methods, 415 for non-JSON, 400 for missing headers', async () => {
    const { app } = receiverApp(t.storage, { secrets: [secret] });
    const get = await request(app).get('/webhooks');
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    const put = await request(app).put('/webhooks').send({});
    expect(put.status).toBe(405);

    const d = signDelivery(secret, ping());
    const text = await request(app)
      .post('/webhooks')
      .set({ ...d.headers, 'content-type': 'text/plain' })
      .send(d.body);
    expect(text.status).toBe(415);
    const none = await request(app).post('/webhooks').send(Buffer.from(d.body));
    expect(none.status).toBe(415);

    const noId = await request(app)
      .post('/webhooks')
      .set('content-type', 'application/json')
      .set('webhook-timestamp', d.headers['webhook-timestamp']!)
      .set('webhook-signature', d.headers['webhook-signature']!)
      .send(d.body);
    expect(noId.status).toBe(400);
    expect(noId.body.code).toBe('MISSING_HEADERS');
  });

  it('answers 400 for truncated, doubled or non-JSON signed bodies', async () => {
    const { app } = receiverApp(t.storage, { secrets: [secret] });
    const whole = JSON.stringify(ping());
    for (const body of [whole.slice(0, -3), whole + whole, 'hello']) {
      const res = await post(app, signDelivery(secret, body));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PAYLOAD');
    }
  });

  it('answers 413 for a 10 MB body, declared or streamed, and stays up', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    let runs = 0;
    webhooks.on('test.ping', () => {
      runs++;
    });
    const big = JSON.stringify({ type: 'test.ping', pad: 'x'.repeat(10 * 1024 * 1024) });
    const d = signDelivery(secret, big);
    const res = await post(app, d);
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE');

    // Chunked (no Content-Length): the limit is enforced while streaming.
    const chunked = await streamDelivery(app, d.headers, (req) => {
      for (let i = 0; i < 10; i++) req.write(Buffer.alloc(1024 * 1024, 0x20));
      req.end();
    });
    expect(chunked).toBe(413);
    expect(runs).toBe(0);
    expect((await post(app, signDelivery(secret, ping()))).status).toBe(200);
  });

  it('survives a sender that disconnects mid-body, without running handlers', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    let runs = 0;
    webhooks.on('test.ping', () => {
      runs++;
    });
    const d = signDelivery(secret, ping());
    const server = app.listen(0);
    try {
      const port = (server.address() as { port: number }).port;
      await new Promise<void>((resolve) => {
        const req = http.request({
          port,
          method: 'POST',
          path: '/webhooks',
          headers: { ...d.headers, 'content-length': String(d.body.length + 100) },
        });
        req.on('error', () => resolve());
        req.write(d.body.slice(0, 10));
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 20);
      });
      const ok = await request(server).post('/webhooks').set(d.headers).send(d.body);
      expect(ok.status).toBe(200);
      expect(runs).toBe(1);
    } finally {
      server.close();
    }
  });

  it('honours a smaller maxBodyBytes', async () => {
    const { app } = receiverApp(t.storage, { secrets: [secret], options: { maxBodyBytes: 64 } });
    const res = await post(app, signDelivery(secret, ping({ pad: 'y'.repeat(100) })));
    expect(res.status).toBe(413);
  });

  it('runs effects once when the same delivery arrives 100 times in parallel', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    const table = t.tables[0];
    let runs = 0;
    webhooks.on('test.ping', async (event, { tx }) => {
      runs++;
      await tx.insert(table).values({ storeId: 'dedupe-store', body: event.id });
    });
    const d = signDelivery(secret, ping());
    const results = await Promise.all(Array.from({ length: 100 }, () => post(app, d)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const statuses = results.map((r) => r.body.status);
    expect(statuses.filter((s) => s === 'processed')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'duplicate')).toHaveLength(99);
    expect(runs).toBe(1);
    expect(await t.count('app_notes', 'dedupe-store')).toBe(1);
  });

  it('answers 500 when a handler throws (effects rolled back), then a redelivery succeeds', async () => {
    const { app, webhooks, logs } = receiverApp(t.storage, { secrets: [secret] });
    const table = t.tables[1];
    let fail = true;
    webhooks.on('test.ping', async (event, { tx }) => {
      await tx.insert(table).values({ storeId: 'retry-store', body: event.id });
      if (fail) throw new Error('downstream unavailable: secret-detail');
    });
    const d = signDelivery(secret, ping());
    const first = await post(app, d);
    expect(first.status).toBe(500);
    expect(first.body.code).toBe('WEBHOOK_HANDLER_FAILED');
    expect(JSON.stringify(first.body)).not.toContain('secret-detail');
    expect(await t.count('app_orders_cache', 'retry-store')).toBe(0);
    expect(logs.some((l) => l.level === 'error')).toBe(true);

    fail = false;
    const retry = await post(app, d);
    expect(retry.status).toBe(200);
    expect(retry.body.status).toBe('processed');
    expect(await t.count('app_orders_cache', 'retry-store')).toBe(1);
    expect((await post(app, d)).body.status).toBe('duplicate');
  });

  it('answers 202 when handlers outlast ackTimeoutMs and lets them finish', async () => {
    const { app, webhooks, logs } = receiverApp(t.storage, {
      secrets: [secret],
      options: { ackTimeoutMs: 50 },
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let finished = false;
    webhooks.on('test.ping', async () => {
      await gate;
      finished = true;
    });
    const res = await post(app, signDelivery(secret, ping()));
    expect(res.status).toBe(202);
    expect(finished).toBe(false);
    release();
    await expect.poll(() => finished, { timeout: 10_000 }).toBe(true);
    expect(logs.some((l) => l.level === 'warn' && /202/.test(l.msg ?? ''))).toBe(true);
  });

  it('acknowledges each slow delivery in flight with 202 while quick ones get 200', async () => {
    const { app, webhooks } = receiverApp(t.storage, {
      secrets: [secret],
      options: { ackTimeoutMs: 50 },
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let finished = 0;
    webhooks.on('test.slow', async () => {
      await gate;
      finished++;
    });
    const slow = () => post(app, signDelivery(secret, { type: 'test.slow', nonce: randomUUID() }));
    // No handler: answered without a transaction, so the slow ones' cannot hold it up.
    const quick = () =>
      post(app, signDelivery(secret, { type: 'test.other', nonce: randomUUID() }));
    try {
      // Two slow ones and a quick one together, then another slow one after the first acks.
      const [first, second, fast] = await Promise.all([slow(), slow(), quick()]);
      const later = await slow();
      expect([first.status, second.status, fast.status, later.status]).toEqual([
        202, 202, 200, 202,
      ]);
      expect(fast.body.status).toBe('ignored');
    } finally {
      release();
    }
    await expect.poll(() => finished, { timeout: 10_000 }).toBe(3);
  });

  it('prunes delivery ids older than dedupeRetentionHours, keeping recent ones', async () => {
    const old = `old-${randomUUID()}`;
    await t.storage.webhooks.runOnce(old, 'test.ping', async () => {});
    const longAgo = Date.now() - 31 * 24 * 3_600_000;
    await t.exec(
      `UPDATE store_app_webhook_deliveries SET received_at = ${longAgo} WHERE webhook_id = '${old}'`,
    );
    const { app, webhooks, logs } = receiverApp(t.storage, { secrets: [secret] });
    webhooks.on('test.ping', () => {});
    const d = signDelivery(secret, ping());
    expect((await post(app, d)).status).toBe(200);
    const ids = async (id: string) =>
      t.storage.db.all(
        sql`SELECT webhook_id FROM store_app_webhook_deliveries WHERE webhook_id = ${id}`,
      ).length;
    await expect.poll(() => ids(old), { timeout: 10_000 }).toBe(0);
    expect(await ids(d.id)).toBe(1);
    expect(logs.some((l) => l.msg === 'old webhook delivery ids pruned')).toBe(true);
  });

  it('acknowledges unknown topics with 200 and logs them', async () => {
    const { app, logs } = receiverApp(t.storage, { secrets: [secret] });
    const res = await post(app, signDelivery(secret, { type: 'orders.created', id: 1 }));
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ignored');
    expect(logs.some((l) => (l.obj as { topic?: string }).topic === 'orders.created')).toBe(true);
  });

  it('stops calling a handler removed with the function on() returned', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    let runs = 0;
    const off = webhooks.on('test.ping', () => {
      runs++;
    });
    off();
    expect((await post(app, signDelivery(secret, ping()))).status).toBe(200);
    expect(runs).toBe(0);
  });

  it('serves a custom path and header names', async () => {
    const { app } = receiverApp(t.storage, {
      secrets: [secret],
      options: {
        path: '/hooks/store',
        headers: { id: 'X-Id', timestamp: 'X-Ts', signature: 'X-Sig' },
      },
    });
    const d = signDelivery(secret, ping());
    const res = await request(app)
      .post('/hooks/store')
      .set('content-type', 'application/json')
      .set('x-id', d.headers['webhook-id']!)
      .set('x-ts', d.headers['webhook-timestamp']!)
      .set('x-sig', d.headers['webhook-signature']!)
      .send(d.body);
    expect(res.status).toBe(200);
  });

  it('runs a custom verifier and answers 401 when it throws', async () => {
    const { app } = receiverApp(t.storage, {
      secrets: ['shared-token'],
      options: {
        scheme: ({ rawBody, headers, secrets }) => {
          if (headers['x-token'] !== secrets[0]) throw new Error('no');
          const payload = JSON.parse(rawBody.toString());
          return {
            id: String(headers['x-delivery']),
            topic: payload.type,
            timestamp: new Date(),
            payload,
            rawBody,
          };
        },
      },
    });
    const body = JSON.stringify(ping());
    const ok = await request(app)
      .post('/webhooks')
      .set({
        'content-type': 'application/json',
        'x-token': 'shared-token',
        'x-delivery': randomUUID(),
      })
      .send(body);
    expect(ok.status).toBe(200);
    const bad = await request(app)
      .post('/webhooks')
      .set({ 'content-type': 'application/json', 'x-token': 'guess', 'x-delivery': randomUUID() })
      .send(body);
    expect(bad.status).toBe(401);
  });
});

describe('a custom verifier on an instance that has not read the platform clock yet', () => {
  it('a timestamp it refuses as out of tolerance is judged again after one clock re-read', async () => {
    // The instance's estimate is 10 minutes off until the re-read corrects it.
    const platformNow = () => Math.floor(Date.now() / 1000);
    let offset = 600;
    let resyncs = 0;
    const { app, webhooks } = receiverApp(t.storage, {
      secrets: ['shared-token'],
      nowSeconds: () => platformNow() + offset,
      resyncClock: async () => {
        resyncs++;
        offset = 0;
        return true;
      },
      options: {
        scheme: ({ rawBody, headers, secrets, toleranceSeconds, nowSeconds }) => {
          if (headers['x-token'] !== secrets[0]) {
            throw new WebhookVerificationError(SIGNATURE_MISMATCH, 'wrong token');
          }
          const sent = Number(headers['x-sent']);
          if (Math.abs(nowSeconds - sent) > toleranceSeconds) {
            throw new WebhookVerificationError(TIMESTAMP_OUT_OF_TOLERANCE, 'stale');
          }
          const payload = JSON.parse(rawBody.toString());
          return {
            id: String(headers['x-delivery']),
            topic: payload.type,
            timestamp: new Date(sent * 1000),
            payload,
            rawBody,
          };
        },
      },
    });
    const seen: string[] = [];
    webhooks.on('test.ping', (event) => {
      seen.push(event.id);
    });
    const send = (sent: number, token = 'shared-token') =>
      request(app)
        .post('/webhooks')
        .set({
          'content-type': 'application/json',
          'x-token': token,
          'x-delivery': randomUUID(),
          'x-sent': String(sent),
        })
        .send(JSON.stringify(ping()));
    const fresh = await send(platformNow());
    expect(fresh.status).toBe(200);
    expect(resyncs).toBe(1);
    expect(seen).toHaveLength(1);
    // Another refusal reads nothing again; a delivery stale in the right clock stays refused.
    expect((await send(platformNow(), 'guess')).status).toBe(401);
    expect(resyncs).toBe(1);
    const stale = await send(platformNow() - 3_600);
    expect(stale.status).toBe(401);
    expect(stale.body.code).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
    expect(seen).toHaveLength(1);
  });
});

describe('mounting orders with a host body parser', () => {
  it('verifies when express.json({ verify: keepRawBody }) runs globally before the kit', async () => {
    const { app } = receiverApp(t.storage, {
      secrets: [secret],
      before: (a) => a.use(express.json({ verify: keepRawBody })),
    });
    // Key order and spacing the parser would not reproduce on re-serialising.
    const body = '{ "nonce": "' + randomUUID() + '",  "type":"test.ping" }';
    const res = await post(app, signDelivery(secret, body));
    expect(res.status).toBe(200);
  });

  it('verifies when the kit is mounted before a global express.json()', async () => {
    const { app, webhooks } = receiverApp(t.storage, { secrets: [secret] });
    app.use(express.json());
    app.post('/api/echo', (req, res) => {
      res.json(req.body);
    });
    let runs = 0;
    webhooks.on('test.ping', () => {
      runs++;
    });
    expect((await post(app, signDelivery(secret, ping()))).status).toBe(200);
    expect(runs).toBe(1);
    // The host's own JSON routes still get parsed bodies.
    expect((await request(app).post('/api/echo').send({ a: 1 })).body).toEqual({ a: 1 });
  });

  it('verifies after express.raw() for JSON', async () => {
    const { app } = receiverApp(t.storage, {
      secrets: [secret],
      before: (a) => a.use(express.raw({ type: 'application/json' })),
    });
    expect((await post(app, signDelivery(secret, ping()))).status).toBe(200);
  });

  it('answers 503 with Retry-After and the fix when a plain express.json() consumed the body first (the platform retries)', async () => {
    const { app, logs, webhooks } = receiverApp(t.storage, {
      secrets: [secret],
      before: (a) => a.use(express.json()),
    });
    let runs = 0;
    webhooks.on('test.ping', () => {
      runs++;
    });
    const res = await post(app, signDelivery(secret, ping()));
    // Never a 2xx (the delivery would be dropped) and a status the platform retries.
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.body.code).toBe('WEBHOOK_BODY_CONSUMED');
    expect(res.body.message).toContain('keepRawBody');
    await post(app, signDelivery(secret, ping()));
    expect(logs.filter((l) => l.level === 'error')).toHaveLength(1);
    expect(runs).toBe(0);
  });
});

describe('app.uninstalled through the receiver', () => {
  it('runs the app handler, then purges the store; other stores untouched', async () => {
    const { app, webhooks } = receiverApp(t.storage, {
      secrets: [secret],
      purgeOptions: { storeScopedTables: t.tables },
    });
    const { seedAppRows, seedInstallation } = await import('./fixtures.js');
    const gone = `store-${randomUUID()}`;
    const kept = `store-${randomUUID()}`;
    for (const s of [gone, kept]) {
      await seedInstallation(t.storage, s);
      await seedAppRows(t, s);
    }
    const order: string[] = [];
    webhooks.on('app.uninstalled', async (event) => {
      order.push(`handler:${event.payload.data.store_id}`);
      // The purge has not run yet when the app's own handler runs.
      order.push(`installed:${(await t.storage.installations.get(gone)) !== null}`);
    });
    const res = await post(
      app,
      signDelivery(secret, uninstallPayload(gone, new Date(Date.now() + 1000))),
    );
    expect(res.status).toBe(200);
    expect(order).toEqual([`handler:${gone}`, 'installed:true']);
    expect(await t.storage.installations.get(gone)).toBeNull();
    expect(await t.storage.installations.get(kept)).not.toBeNull();
    for (const name of ['app_notes', 'app_orders_cache', 'app_settings']) {
      expect(await t.count(name, gone)).toBe(0);
      expect(await t.count(name, kept)).toBe(3);
    }
  });

  it('answers 400 for a signed app.uninstalled without a usable data.store_id', async () => {
    const { app } = receiverApp(t.storage, { secrets: [secret] });
    for (const data of [
      {},
      { store_id: 'a\u0000b' },
      { store_id: 'x'.repeat(300) },
      { store_id: 7 },
    ]) {
      const res = await post(app, signDelivery(secret, { type: 'app.uninstalled', data }));
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_PAYLOAD');
    }
  });
});
