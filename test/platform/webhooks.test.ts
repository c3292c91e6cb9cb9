import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { PLATFORM_NOT_INSTALLED, startPlatform } from '../../src/platform/index.js';
import { install } from './helpers.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real receiver: answers with the next status of `statuses` (the last one repeats), or hangs. */
async function receiver(
  statuses: Array<number | 'hang'>,
): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = statuses[Math.min(received.length - 1, statuses.length - 1)]!;
      if (status === 'hang') return;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    server,
  };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(
  statuses: Array<number | 'hang'>,
  options: Parameters<typeof startPlatform>[0] = {},
) {
  const r = await receiver(statuses);
  cleanup.push(
    () =>
      new Promise<void>((res) => {
        r.server.closeAllConnections();
        r.server.close(() => res());
      }),
  );
  const platform = await startPlatform(options);
  cleanup.push(() => platform.close());
  const inst = await install(platform, { webhookUrl: r.url });
  return { platform, inst, ...r };
}

describe('uninstall and app.uninstalled', () => {
  it('revokes at once and delivers a Standard Webhooks signed payload that verifies', async () => {
    const { platform, inst, received } = await setup([200]);
    const result = platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    expect(result.revokedTokens).toBeGreaterThanOrEqual(2);
    const [delivery] = await platform.waitForDeliveries({ clientId: inst.clientId });
    expect(delivery).toMatchObject({
      id: result.deliveryId,
      status: 'succeeded',
      topic: 'app.uninstalled',
    });
    expect(delivery!.attempts).toHaveLength(1);
    expect(delivery!.attempts[0]!.status).toBe(200);

    expect(received).toHaveLength(1);
    const { headers, body } = received[0]!;
    expect(headers['content-type']).toBe('application/json');
    expect(headers['webhook-id']).toBe(result.deliveryId);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const verified = new Webhook(inst.webhookSecret).verify(body, {
      'webhook-id': String(headers['webhook-id']),
      'webhook-timestamp': String(headers['webhook-timestamp']),
      'webhook-signature': String(headers['webhook-signature']),
    }) as Record<string, unknown>;
    expect(verified).toEqual({
      type: 'app.uninstalled',
      timestamp: expect.any(String),
      data: {
        store_id: inst.storeId,
        app_id: inst.appId,
        client_id: inst.clientId,
        uninstalled_at: expect.any(String),
      },
    });
    // A tampered body does not verify.
    expect(() =>
      new Webhook(inst.webhookSecret).verify(body.replace(inst.storeId, 'x'), {
        'webhook-id': String(headers['webhook-id']),
        'webhook-timestamp': String(headers['webhook-timestamp']),
        'webhook-signature': String(headers['webhook-signature']),
      }),
    ).toThrow();
  });

  it('refuses to uninstall an app that is not installed', async () => {
    const { platform, inst } = await setup([200]);
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    expect(() => platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId })).toThrow(
      expect.objectContaining({ code: PLATFORM_NOT_INSTALLED }),
    );
  });

  it('retries failed deliveries on the schedule with the same webhook-id, then succeeds', async () => {
    const { platform, inst, received } = await setup([500, 503, 204], {
      webhookRetrySchedule: [0.05, 0.05, 0.05],
    });
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId: inst.clientId });
    expect(delivery!.status).toBe('succeeded');
    expect(delivery!.attempts.map((a) => a.status)).toEqual([500, 503, 204]);
    expect(new Set(received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    // Each attempt is signed afresh and verifies.
    for (const r of received) {
      expect(() =>
        new Webhook(inst.webhookSecret).verify(r.body, {
          'webhook-id': String(r.headers['webhook-id']),
          'webhook-timestamp': String(r.headers['webhook-timestamp']),
          'webhook-signature': String(r.headers['webhook-signature']),
        }),
      ).not.toThrow();
    }
  });

  it('gives up after the last scheduled retry and records every attempt', async () => {
    const { platform, inst } = await setup([500], { webhookRetrySchedule: [0.02, 0.02] });
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId: inst.clientId });
    expect(delivery!.status).toBe('failed');
    expect(delivery!.attempts).toHaveLength(3);
    expect(delivery!.nextAttemptAt).toBeNull();
  });

  it('records a timeout as an error, and uninstall never waits for the receiver', async () => {
    const { platform, inst } = await setup(['hang', 200], {
      webhookTimeoutMs: 1000,
      webhookRetrySchedule: [0.02],
    });
    const t0 = performance.now();
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    // Well below the hanging delivery's 1000 ms timeout, with room for a loaded machine.
    expect(performance.now() - t0).toBeLessThan(500);
    const [delivery] = await platform.waitForDeliveries({ clientId: inst.clientId });
    expect(delivery!.attempts[0]!.error).toMatch(/1000 ms/);
    expect(delivery!.attempts[0]!.status).toBeUndefined();
    expect(delivery!.status).toBe('succeeded');
  });

  it('records a connection error and close() stops pending retries', async () => {
    const platform = await startPlatform({ webhookRetrySchedule: [3600] });
    const inst = await install(platform, { webhookUrl: 'http://127.0.0.1:9/closed-port' });
    platform.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId: inst.clientId, attempts: 1 });
    expect(delivery!.status).toBe('pending');
    expect(delivery!.attempts[0]!.error).toEqual(expect.any(String));
    expect(delivery!.nextAttemptAt).not.toBeNull();
    const t0 = performance.now();
    await platform.close();
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});
