/**
 * Issue 23 §3: `/webhooks` holds no unsigned body and waits for no body
 * forever. Raw sockets against a real server: headers are checked before the
 * body is read, a body has a deadline, and the unverified bytes held at once
 * are bounded (503 with Retry-After past the bound).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookOptions } from '../../src/webhooks/index.js';
import { newSecret, openTestDb, receiverApp, type TestDb } from '../webhooks/fixtures.js';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb('sqlite');
});
afterAll(async () => {
  await t?.close();
});

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function start(options: Omit<WebhookOptions, 'secrets'> = {}): Promise<number> {
  const { app } = receiverApp(t.storage, { secrets: [newSecret()], options });
  const server = createServer(app);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A socket that sent a request head and `bodyBytes` of a body declared `declared` long. */
interface Open {
  socket: Socket;
  /** Resolves with the status line's code, or 0 if the socket closed without one. */
  status: Promise<number>;
  closed: Promise<void>;
  response: () => string;
}

async function openDelivery(
  port: number,
  headers: Record<string, string>,
  declared: number,
  bodyBytes: number,
): Promise<Open> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await once(socket, 'connect');
  let received = '';
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.on('error', () => {});
  const status = new Promise<number>((resolve) => {
    socket.on('data', (d: Buffer) => {
      received += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (m) resolve(Number(m[1]));
    });
    void closed.then(() => resolve(0));
  });
  const head = [
    'POST /webhooks HTTP/1.1',
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    `Content-Length: ${declared}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n');
  socket.write(head);
  if (bodyBytes > 0) socket.write(Buffer.alloc(bodyBytes, 0x20));
  return { socket, status, closed, response: () => received };
}

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> =>
  Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);

/** Headers of the right shape (a current timestamp, a v1 signature) that will not verify. */
const shaped = () => ({
  'webhook-id': `msg_${Math.random().toString(36).slice(2)}`,
  'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
  'webhook-signature': `v1,${Buffer.alloc(32, 7).toString('base64')}`,
});

describe('webhook bodies before verification (issue 23 §3)', () => {
  it('20 deliveries without webhook headers, each 1,048,000 of 1,048,001 bytes: answered 400 unread and every socket closed', async () => {
    const port = await start();
    const opened = await Promise.all(
      Array.from({ length: 20 }, () => openDelivery(port, {}, 1_048_001, 1_048_000)),
    );
    const statuses = await Promise.all(opened.map((o) => within(o.status, 3000)));
    expect(statuses).toEqual(Array(20).fill(400));
    expect(opened[0]!.response()).toContain('MISSING_HEADERS');
    const closed = await Promise.all(opened.map((o) => within(o.closed, 3000)));
    expect(closed.filter((c) => c === 'timeout')).toHaveLength(0);
  });

  it('a stale timestamp or a signature header of the wrong shape is refused (401) before the body arrives', async () => {
    const port = await start();
    const stale = {
      ...shaped(),
      'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600),
    };
    const unsigned = { ...shaped(), 'webhook-signature': '' };
    for (const [headers, code] of [
      [stale, 'TIMESTAMP_OUT_OF_TOLERANCE'],
      [unsigned, 'MISSING_SIGNATURE'],
    ] as const) {
      // Not one body byte sent: the answer cannot have waited for it.
      const o = await openDelivery(port, headers, 500_000, 0);
      expect(await within(o.status, 3000)).toBe(401);
      expect(o.response()).toContain(code);
      expect(await within(o.closed, 3000)).not.toBe('timeout');
    }
  });

  it('a body that does not arrive within bodyTimeoutMs gets 408 and its connection is closed', async () => {
    const port = await start({ bodyTimeoutMs: 300 });
    const o = await openDelivery(port, shaped(), 1000, 10);
    expect(await within(o.status, 3000)).toBe(408);
    expect(o.response()).toContain('WEBHOOK_BODY_TIMEOUT');
    expect(await within(o.closed, 3000)).not.toBe('timeout');
  });

  it('past maxUnverifiedBytes a delivery gets 503 with Retry-After, unread; once the bytes are verified, deliveries are read again', async () => {
    const port = await start({ maxBodyBytes: 1000, maxUnverifiedBytes: 2000, bodyTimeoutMs: 5000 });
    const a = await openDelivery(port, shaped(), 1000, 500);
    const b = await openDelivery(port, shaped(), 1000, 500);
    await new Promise((r) => setTimeout(r, 100));
    const c = await openDelivery(port, shaped(), 1000, 0);
    expect(await within(c.status, 3000)).toBe(503);
    expect(c.response()).toMatch(/retry-after: 5/i);
    expect(c.response()).toContain('WEBHOOK_RECEIVER_BUSY');
    // The held bodies complete: verified (and refused), their reservations are released.
    a.socket.write(Buffer.alloc(500, 0x20));
    b.socket.write(Buffer.alloc(500, 0x20));
    expect(await within(a.status, 3000)).toBe(401);
    expect(await within(b.status, 3000)).toBe(401);
    const d = await openDelivery(port, shaped(), 1000, 1000);
    expect(await within(d.status, 3000)).toBe(401);
    expect(d.response()).toContain('SIGNATURE_MISMATCH');
  });

  it('refuses maxUnverifiedBytes below maxBodyBytes at start, naming the option', async () => {
    await expect(start({ maxBodyBytes: 2000, maxUnverifiedBytes: 1000 })).rejects.toThrow(
      /webhooks\.maxUnverifiedBytes.*at least maxBodyBytes/s,
    );
  });
});
