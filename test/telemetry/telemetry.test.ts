/**
 * The kit's OpenTelemetry spans and counters, read from in-memory exporters
 * registered as the app's global providers, over one real install against the
 * local platform (real sockets, SQLite file), then an API call, a 429, a
 * refresh, an uninstall webhook with its purge, and a forged delivery.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { errorType } from '../../src/telemetry/index.js';
import { Browser, type Harness, startHarness } from '../install/harness.js';
import { type Otel, registerOtel, total } from './otel.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-otel-'));
let otel: Otel;
let h: Harness;
/** Every secret value the flow handles, collected as it goes. */
const secrets = new Set<string>();

beforeAll(async () => {
  otel = registerOtel();
  h = await startHarness({ databaseUrl: join(dir, 'otel.db') });
  secrets.add(h.clientSecret);
  secrets.add(internalsOf(h.kit).config.webhooks.secrets[0]!);
  for (const s of internalsOf(h.kit).config.session.secret) secrets.add(s);
});
afterAll(async () => {
  await h?.close();
  await otel?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});
/** Spans of every test, kept before the next test's reset (the secret check reads them all). */
const allSpans: ReadableSpan[] = [];
beforeEach(() => otel.reset());
afterEach(() => {
  allSpans.push(...otel.spans());
});

const byName = (name: string): ReadableSpan[] => otel.spans().filter((s) => s.name === name);
const one = (name: string): ReadableSpan => {
  const found = byName(name);
  expect(found, `spans named ${name}`).toHaveLength(1);
  return found[0]!;
};
const isChildOf = (child: ReadableSpan, parent: ReadableSpan): boolean =>
  child.parentSpanContext?.spanId === parent.spanContext().spanId &&
  child.spanContext().traceId === parent.spanContext().traceId;

/** Spans end on the response's 'finish', just after the client has the answer. */
async function settled(name: string, count = 1): Promise<void> {
  await vi.waitFor(() => expect(byName(name).length).toBeGreaterThanOrEqual(count), {
    timeout: 5_000,
  });
}

describe('OpenTelemetry spans and counters', () => {
  it('one install: begin, callback and its token exchange as a child, with attributes and status', async () => {
    const browser = new Browser();
    const beginRes = await browser.get(`${h.appUrl}/auth?store_id=${h.storeId}`);
    expect(beginRes.status).toBe(302);
    const authorizeUrl = beginRes.headers.get('location')!;
    const state = new URL(authorizeUrl).searchParams.get('state')!;
    const callbackUrl = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    const code = new URL(callbackUrl).searchParams.get('code')!;
    const cb = await browser.get(callbackUrl);
    expect(cb.status).toBe(302);
    await settled('store_app.install.callback');
    secrets.add(state);
    secrets.add(code);
    secrets.add(browser.cookies.get('store_app.sid')!.value);

    const beginSpan = one('store_app.install.begin');
    expect(beginSpan.kind).toBe(SpanKind.INTERNAL);
    expect(beginSpan.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.response.status_code': 302,
    });
    expect(beginSpan.status.code).toBe(SpanStatusCode.UNSET);

    const callback = one('store_app.install.callback');
    expect(callback.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.response.status_code': 302,
      'store_app.store.id': h.storeId,
    });
    expect(callback.status.code).toBe(SpanStatusCode.UNSET);

    const exchange = one('POST /oauth/token');
    expect(exchange.kind).toBe(SpanKind.CLIENT);
    expect(isChildOf(exchange, callback)).toBe(true);
    const platform = new URL(h.platform.authUrl);
    expect(exchange.attributes).toEqual({
      'http.request.method': 'POST',
      'url.template': '/oauth/token',
      'store_app.oauth.grant_type': 'authorization_code',
      'server.address': platform.hostname,
      'server.port': Number(platform.port),
      'http.response.status_code': 200,
    });
    expect(exchange.status.code).toBe(SpanStatusCode.UNSET);

    const inst = await h.kit.installations.get(h.storeId);
    secrets.add(inst!.accessToken);
    secrets.add(inst!.refreshToken!);
  });

  it('a failed install callback: error status, error.type is the page code, a failure is counted', async () => {
    const before = total(await otel.counter('store_app.failures'), {
      'store_app.operation': 'install',
      'error.type': 'INSTALL_BINDING_MISSING',
    });
    const res = await fetch(`${h.appUrl}/auth/callback?code=abc&state=def`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-store-app-error')).toBe('INSTALL_BINDING_MISSING');
    await settled('store_app.install.callback');
    const span = one('store_app.install.callback');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['error.type']).toBe('INSTALL_BINDING_MISSING');
    expect(span.attributes['http.response.status_code']).toBe(400);
    const after = total(await otel.counter('store_app.failures'), {
      'store_app.operation': 'install',
      'error.type': 'INSTALL_BINDING_MISSING',
    });
    expect(after - before).toBe(1);
  });

  it('API calls: CLIENT spans named by their url.template, never the ids or the query', async () => {
    const client = h.kit.client(h.storeId);
    await client.products.list({ limit: 2 });
    const missing = randomUUID();
    await expect(client.products.get(missing)).rejects.toMatchObject({ status: 404 });

    const list = one('GET /api/v1/products');
    expect(list.kind).toBe(SpanKind.CLIENT);
    expect(list.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.template': '/api/v1/products',
      'http.response.status_code': 200,
      'http.request.resend_count': 0,
      'store_app.store.id': h.storeId,
      'store_app.rate_limit.wait_ms': expect.any(Number),
    });
    expect(list.status.code).toBe(SpanStatusCode.UNSET);
    const get = one('GET /api/v1/products/{id}');
    expect(get.attributes['url.template']).toBe('/api/v1/products/{id}');
    expect(get.attributes['http.response.status_code']).toBe(404);
    expect(get.status.code).toBe(SpanStatusCode.ERROR);
    expect(get.attributes['error.type']).toBe('NOT_FOUND');
    expect(JSON.stringify(describeSpan(get))).not.toContain(missing);
    expect(JSON.stringify(describeSpan(list))).not.toContain('limit=');
  });

  it('a 429: an event on the call span, a retry counted as a resend, and the 429 counter', async () => {
    const before = total(await otel.counter('store_app.api.rate_limited'));
    h.platform.setFaults({ api: { rateLimitRate: 1, retryAfterSeconds: 0, count: 1 } });
    try {
      await h.kit.client(h.storeId).products.list();
    } finally {
      h.platform.setFaults(undefined);
    }
    const span = one('GET /api/v1/products');
    expect(span.events.map((e) => e.name)).toEqual(['store_app.rate_limited']);
    expect(span.events[0]!.attributes).toEqual({ 'store_app.rate_limit.retry_after_s': 0 });
    expect(span.attributes['http.request.resend_count']).toBe(1);
    expect(span.attributes['http.response.status_code']).toBe(200);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(total(await otel.counter('store_app.api.rate_limited')) - before).toBe(1);
  });

  it('a refresh after the platform expired the token: span under the API call, token call under it, counted', async () => {
    const before = total(await otel.counter('store_app.token.refreshes'), {
      'store_app.outcome': 'refreshed',
    });
    h.platform.advanceClock(86_400 + 60);
    await h.kit.client(h.storeId).products.list();

    const call = one('GET /api/v1/products');
    const refresh = one('store_app.token.refresh');
    expect(isChildOf(refresh, call)).toBe(true);
    expect(refresh.attributes).toEqual({
      'store_app.store.id': h.storeId,
      'store_app.outcome': 'refreshed',
    });
    const tokenCall = one('POST /oauth/token');
    expect(isChildOf(tokenCall, refresh)).toBe(true);
    expect(tokenCall.attributes['store_app.oauth.grant_type']).toBe('refresh_token');
    expect(call.attributes['http.request.resend_count']).toBe(1);
    const after = total(await otel.counter('store_app.token.refreshes'), {
      'store_app.outcome': 'refreshed',
    });
    expect(after - before).toBe(1);

    const inst = await h.kit.installations.get(h.storeId);
    secrets.add(inst!.accessToken);
    secrets.add(inst!.refreshToken!);
  });

  it('a forged delivery: the webhook span fails with the verification code, counted', async () => {
    const res = await fetch(`${h.appUrl}/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      },
      body: JSON.stringify({ type: 'app.uninstalled', data: { store_id: h.storeId } }),
    });
    expect(res.status).toBe(401);
    const { code } = (await res.json()) as { code: string };
    await settled('store_app.webhook.receive');
    const span = one('store_app.webhook.receive');
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['error.type']).toBe(code);
    expect(span.attributes['store_app.webhook.topic']).toBeUndefined();
    expect(byName('store_app.purge')).toHaveLength(0);
    const failures = await otel.counter('store_app.failures');
    expect(total(failures, { 'store_app.operation': 'webhook', 'error.type': code })).toBe(1);
  });

  it('an uninstall: webhook span with topic and outcome, the purge as its child, purges counted', async () => {
    const { deliveryId } = h.platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    await h.platform.waitForDeliveries({ clientId: h.clientId });
    await settled('store_app.webhook.receive');
    const webhook = one('store_app.webhook.receive');
    expect(webhook.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'store_app.webhook.topic': 'app.uninstalled',
      'store_app.webhook.id': deliveryId,
      'store_app.outcome': 'processed',
    });
    expect(webhook.status.code).toBe(SpanStatusCode.UNSET);
    const purge = one('store_app.purge');
    expect(isChildOf(purge, webhook)).toBe(true);
    expect(purge.attributes).toEqual({
      'store_app.store.id': h.storeId,
      'store_app.outcome': 'purged',
    });
    const purges = await otel.counter('store_app.purges');
    expect(total(purges, { 'store_app.outcome': 'purged' })).toBe(1);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });

  it('no span name, attribute, event or status carries a token, code, state or secret', async () => {
    // Everything exported by the flows above: install, API calls, 429, refresh, webhooks, purge.
    expect(secrets.size).toBeGreaterThanOrEqual(9);
    const seen = JSON.stringify(allSpans.map(describeSpan));
    expect(seen).toContain('store_app.install.callback');
    expect(seen).toContain('store_app.token.refresh');
    for (const s of secrets) {
      expect(s.length).toBeGreaterThan(10);
      expect(seen).not.toContain(s);
    }
    const points = await Promise.all(
      [
        'store_app.failures',
        'store_app.token.refreshes',
        'store_app.purges',
        'store_app.api.rate_limited',
      ].map((n) => otel.counter(n)),
    );
    const metricText = JSON.stringify(points);
    for (const s of secrets) expect(metricText).not.toContain(s);
    // Counters carry no store id (cardinality, and they leave the app more widely).
    expect(metricText).not.toContain(h.storeId);
  });
});

function describeSpan(s: ReadableSpan): unknown {
  return {
    name: s.name,
    attributes: s.attributes,
    events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
    status: s.status,
    links: s.links,
  };
}

describe('error.type', () => {
  it('a platform body cannot put free text or an unbounded value into error.type', () => {
    const withCode = (code: unknown) => Object.assign(new Error('m'), { code });
    expect(errorType(withCode('NOT_FOUND'))).toBe('NOT_FOUND');
    expect(errorType(withCode('invalid_grant'))).toBe('invalid_grant');
    expect(errorType(withCode('token at_live_123 is bad'))).toBe('Error');
    expect(errorType(withCode('x'.repeat(65)))).toBe('Error');
    expect(errorType({ code: 'see https://evil.example/?q=1' })).toBe('_OTHER');
    expect(errorType('a string thrown')).toBe('_OTHER');
  });
});
