/**
 * Fault injection in the local platform: each fault, over real sockets, and
 * the platform heals when the faults are removed at run time.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PLATFORM_INVALID_OPTIONS,
  type Platform,
  PlatformError,
  type PlatformOptions,
  startPlatform,
} from '../../src/platform/index.js';
import { type Installed, install } from '../platform/helpers.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function platformWith(options: PlatformOptions = {}): Promise<Platform> {
  const p = await startPlatform(options);
  cleanup.push(() => p.close());
  return p;
}

function api(p: Platform, inst: Installed, path = '/products?limit=1'): Promise<Response> {
  return fetch(`${p.apiUrl}${path}`, {
    headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
  });
}

function refresh(
  p: Platform,
  inst: Installed,
  refreshToken = inst.refreshToken,
  signal?: AbortSignal,
) {
  return fetch(`${p.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'refresh_token',
      client_id: inst.clientId,
      client_secret: inst.clientSecret,
      refresh_token: refreshToken,
    }),
    ...(signal ? { signal } : {}),
  });
}

async function statuses(p: Platform, inst: Installed, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await api(p, inst)).status);
  return out;
}

describe('fault options', () => {
  it('rejects invalid faults with PLATFORM_INVALID_OPTIONS, at start and at run time', async () => {
    for (const faults of [
      { api: { errorRate: 2 } },
      { api: { latencyMs: -1 } },
      { token: { errorStatus: 404 } },
      { webhookDuplicate: 0 },
      { nope: true },
      { api: { typo: 1 } },
    ]) {
      await expect(startPlatform({ faults: faults as never })).rejects.toMatchObject({
        code: PLATFORM_INVALID_OPTIONS,
      });
    }
    const p = await platformWith();
    expect(() => p.setFaults({ api: { resetRate: -0.1 } })).toThrow(PlatformError);
  });
});

describe('route faults', () => {
  it('adds latency (with jitter) to the api group only', async () => {
    const p = await platformWith({ faults: { api: { latencyMs: 150, jitterMs: 50 } } });
    const inst = await install(p);
    const t = performance.now();
    expect((await api(p, inst)).status).toBe(200);
    const slow = performance.now() - t;
    expect(slow).toBeGreaterThanOrEqual(145);
    // The token group has no rule: only the API call was delayed (no wall-clock bound: CI is busy).
    expect((await refresh(p, inst)).status).toBe(200);
    expect(p.faultStats().delayed).toBe(1);
  });

  it('answers a seeded share of api requests 5xx, the same ones on every run, then heals', async () => {
    const faults = { seed: 42, api: { errorRate: 0.5, errorStatus: 502 } };
    const a = await platformWith({ faults });
    const instA = await install(a);
    const runA = await statuses(a, instA, 40);
    const b = await platformWith({ faults });
    const instB = await install(b);
    const runB = await statuses(b, instB, 40);
    expect(runA).toEqual(runB);
    const errors = runA.filter((s) => s === 502).length;
    expect(errors).toBeGreaterThan(8);
    expect(errors).toBeLessThan(32);
    expect(new Set(runA)).toEqual(new Set([200, 502]));
    const injected = await (async () => {
      a.setFaults({ seed: 42, api: { errorRate: 1 } });
      return api(a, instA);
    })();
    expect(injected.status).toBe(503);
    expect(await injected.json()).toMatchObject({ code: 'INTERNAL_ERROR' });
    a.setFaults(undefined);
    expect(await statuses(a, instA, 5)).toEqual([200, 200, 200, 200, 200]);
  });

  it('applies a rule with count to the next n requests only, then heals by itself', async () => {
    const p = await platformWith();
    const inst = await install(p);
    p.setFaults({ api: { errorRate: 1, count: 2 } });
    expect(await statuses(p, inst, 4)).toEqual([503, 503, 200, 200]);
    p.setFaults({ api: { errorRate: 1, count: 1 } });
    expect(await statuses(p, inst, 2)).toEqual([503, 200]);
  });

  it('answers a 429 storm with Retry-After, in the API error shape', async () => {
    const p = await platformWith({ faults: { api: { rateLimitRate: 1, retryAfterSeconds: 7 } } });
    const inst = await install(p);
    const res = await api(p, inst);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toMatchObject({ code: 'rate_limited' });
    p.setFaults({ token: { rateLimitRate: 1 } });
    const tok = await refresh(p, inst);
    expect(tok.status).toBe(429);
    expect(tok.headers.get('retry-after')).toBe('1');
    expect(p.stats().tokenRequests.refresh_token).toBe(0);
    expect(p.faultStats().rateLimited).toBe(2);
  });

  it('resets the connection mid-response after the route ran (a refresh whose answer is lost)', async () => {
    const p = await platformWith();
    const inst = await install(p);
    p.setFaults({ token: { resetRate: 1 } });
    // The platform rotated the token but the client never learns the new one…
    await expect(refresh(p, inst).then((r) => r.json())).rejects.toThrow();
    expect(p.stats().tokenRequests.refresh_token).toBe(1);
    expect(p.faultStats().resets).toBe(1);
    p.setFaults({});
    // …and the refresh grace period lets it retry with the old one.
    const retry = await refresh(p, inst);
    expect(retry.status).toBe(200);
    const body = (await retry.json()) as { access_token: string };
    const ok = await fetch(`${p.apiUrl}/products?limit=1`, {
      headers: { authorization: `Bearer ${body.access_token}`, 'x-store-id': inst.storeId },
    });
    expect(ok.status).toBe(200);
  });

  it('faults the authorize and session groups independently', async () => {
    const p = await platformWith({ faults: { authorize: { errorRate: 1 } } });
    const inst = await install(p);
    const page = await fetch(`${p.authUrl}/oauth/authorize?client_id=${inst.clientId}`);
    expect(page.status).toBe(503);
    const session = await fetch(`${p.authUrl}/oauth/session`, {
      headers: { authorization: `Bearer ${inst.accessToken}` },
    });
    expect(session.status).toBe(200);
    p.setFaults({ session: { errorRate: 1, errorStatus: 500 } });
    const broken = await fetch(`${p.authUrl}/oauth/session`, {
      headers: { authorization: `Bearer ${inst.accessToken}` },
    });
    expect(broken.status).toBe(500);
    // Pages and assets outside the groups are never faulted.
    expect((await fetch(`${p.url}/.well-known/oauth-authorization-server`)).status).toBe(200);
  });
});

describe('token endpoint timeout', () => {
  it('holds token requests until the client gives up, heals, and close() still closes', async () => {
    const p = await startPlatform();
    let closed = false;
    cleanup.push(async () => {
      if (!closed) await p.close();
    });
    const inst = await install(p);
    p.setFaults({ tokenTimeout: true });
    await expect(
      refresh(p, inst, inst.refreshToken, AbortSignal.timeout(200)),
    ).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(p.stats().tokenRequests.refresh_token).toBe(0);
    p.setFaults({});
    expect((await refresh(p, inst)).status).toBe(200);
    p.setFaults({ tokenTimeout: true });
    const pending = refresh(p, inst).then(
      (r) => r.status,
      (err: Error) => err.name,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(p.faultStats().hung).toBe(2);
    const t = performance.now();
    await p.close();
    closed = true;
    expect(performance.now() - t).toBeLessThan(2000);
    expect(await pending).toBe('TypeError');
  });
});

/** A webhook receiver that records every request and answers 200. */
async function receiver(): Promise<{
  url: string;
  received: IncomingHttpHeaders[];
  server: Server;
}> {
  const received: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(req.headers);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    received,
    server,
  };
}

describe('webhook faults', () => {
  it('sends each delivery n times with the same webhook-id and signature (webhookDuplicate)', async () => {
    const r = await receiver();
    const p = await platformWith({ faults: { webhookDuplicate: 3 } });
    const inst = await install(p, { webhookUrl: r.url });
    const { deliveryId } = p.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const [delivery] = await p.waitForDeliveries({ clientId: inst.clientId });
    expect(delivery?.status).toBe('succeeded');
    expect(delivery?.attempts).toHaveLength(1);
    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((h) => h['webhook-id']))).toEqual(new Set([deliveryId]));
    expect(new Set(r.received.map((h) => h['webhook-signature'])).size).toBe(1);
    expect(p.faultStats().webhookDuplicated).toBe(2);
  });

  it('drops a share of attempts, logs them as failed and retries them on the schedule', async () => {
    const r = await receiver();
    const p = await platformWith({
      webhookRetrySchedule: [0.05, 0.05],
      faults: { webhookDropRate: 1 },
    });
    const inst = await install(p, { webhookUrl: r.url });
    p.uninstall({ storeId: inst.storeId, clientId: inst.clientId });
    const [pending] = await p.waitForDeliveries({ clientId: inst.clientId, attempts: 1 });
    expect(pending?.attempts[0]?.error).toBe('dropped by fault injection');
    expect(r.received).toHaveLength(0);
    p.setFaults({});
    const [done] = await p.waitForDeliveries({ clientId: inst.clientId });
    expect(done?.status).toBe('succeeded');
    expect(done?.attempts.length).toBeGreaterThanOrEqual(2);
    expect(r.received).toHaveLength(1);
  });
});
