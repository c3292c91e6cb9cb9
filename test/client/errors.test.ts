/**
 * Failure mapping and retries against a tiny local HTTP server that plays a
 * misbehaving platform: every bad answer becomes a typed error, never a hang
 * or an unhandled rejection.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AbortedError,
  ConflictError,
  InsufficientScopeError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ResponseInvalidError,
  StoreApiError,
  TimeoutError,
  TokenExpiredError,
  TokenRevokedError,
  ValidationError,
} from '../../src/client/errors.js';
import { createClientFactory } from '../../src/client/factory.js';
import type { StoreApiClient } from '../../src/client/index.js';
import { type ClientOptions, resolveClientOptions } from '../../src/client/options.js';
import {
  parseRetryAfter,
  resetDeprecationNotices,
  type TokenSource,
} from '../../src/client/transport.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let handlers: Handler[] = [];
let seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const h = handlers.shift();
    if (!h) {
      res.writeHead(500).end('no handler');
      return;
    }
    h(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  handlers = [];
  seen = [];
});

function json(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

interface FakeTokens extends TokenSource {
  refreshes: string[];
  revokedCalls: string[];
}

function fakeTokens(): FakeTokens {
  let current = 'tok-1';
  const t: FakeTokens = {
    refreshes: [],
    revokedCalls: [],
    async getAccessToken() {
      return current;
    },
    async refreshRejected(_storeId, rejected) {
      t.refreshes.push(rejected);
      current = `tok-${t.refreshes.length + 1}`;
      return current;
    },
    async revoked(storeId) {
      t.revokedCalls.push(storeId);
      return true;
    },
  };
  return t;
}

const warnings: Array<Record<string, unknown>> = [];

function makeClient(
  tokens: TokenSource = fakeTokens(),
  options: ClientOptions = {},
): StoreApiClient {
  return createClientFactory({
    options: resolveClientOptions({
      baseUrl,
      retries: { max: 3, baseDelayMs: 1, maxDelayMs: 3000 },
      ...options,
    }),
    tokens,
    logger: { warn: (obj) => warnings.push(obj) },
  }).forStore('store-1');
}

const listBody = {
  data: [{ id: 'a' }],
  pagination: { hasMore: false, nextCursor: null, total: 1 },
};

describe('requests', () => {
  it('sends Bearer, X-Store-Id and JSON, and keeps unknown fields', async () => {
    handlers.push(json(201, { id: 'p1', name: 'x', brandNew: 42 }));
    const p = await makeClient().products.create({ name: 'x' });
    // Not in the type (outputs name the documented fields), but present at run time.
    expect((p as typeof p & { brandNew?: number }).brandNew).toBe(42);
    const h = seen[0]!.headers;
    expect(h.authorization).toBe('Bearer tok-1');
    expect(h['x-store-id']).toBe('store-1');
    expect(h['content-type']).toBe('application/json');
    expect(seen[0]!.url).toBe('/api/v1/products');
  });
});

describe('resource ids', () => {
  it.each(['', '.', '..'])('refuses the id %j without sending anything', async (id) => {
    const c = makeClient();
    for (const call of [
      () => c.products.get(id),
      () => c.inventory.set(id, 1),
      () => c.orders.update(id, {}),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: 'INVALID_ID' });
    }
    expect(seen).toHaveLength(0);
  });

  it('request() refuses paths that climb out of the API base', async () => {
    const c = makeClient();
    for (const path of ['/../oauth/token', '/products/%2e%2e/%2E%2E/../admin', '//evil.test/x']) {
      await expect(c.request('GET', path)).rejects.toMatchObject({ code: 'INVALID_PATH' });
    }
    expect(seen).toHaveLength(0);
  });

  it('encodes an id with slashes into one path segment', async () => {
    handlers.push(json(200, { id: 'x' }));
    await makeClient().products.get('a/../../b');
    expect(seen[0]!.url).toBe('/api/v1/products/a%2F..%2F..%2Fb');
  });
});

describe('error mapping', () => {
  it.each([
    [
      422,
      { error: 'bad', code: 'VALIDATION_ERROR', details: [{ field: 'name', message: 'required' }] },
      ValidationError,
      'VALIDATION_ERROR',
    ],
    [404, { error: 'nope', code: 'NOT_FOUND', details: [] }, NotFoundError, 'NOT_FOUND'],
    [409, { error: 'dup', code: 'INVALID_TRANSITION', details: [] }, ConflictError, 'CONFLICT'],
    [400, { error: 'bad q', code: 'BAD_REQUEST', details: [] }, StoreApiError, 'BAD_REQUEST'],
  ] as const)('maps %i', async (status, body, cls, code) => {
    handlers.push(json(status, body));
    const err = await makeClient()
      .products.get('p1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(cls);
    expect(err).toMatchObject({ code, status, method: 'GET', path: '/api/v1/products/p1' });
    if (err instanceof ValidationError) expect(err.fields).toEqual({ name: 'required' });
    if (err instanceof ConflictError) expect(err.platformCode).toBe('INVALID_TRANSITION');
  });

  it('names the missing scope from the body or from WWW-Authenticate', async () => {
    handlers.push(
      json(403, { error: 'x', code: 'insufficient_scope', requiredScope: 'read_orders' }),
    );
    handlers.push((_q, res) => {
      res.writeHead(403, {
        'www-authenticate': 'Bearer error="insufficient_scope", scope="write_products"',
      });
      res.end();
    });
    const c = makeClient();
    const a = await c.orders.list().catch((e: unknown) => e);
    expect(a).toBeInstanceOf(InsufficientScopeError);
    expect((a as InsufficientScopeError).requiredScope).toBe('read_orders');
    const b = await c.products.delete('p1').catch((e: unknown) => e);
    expect(b).toBeInstanceOf(InsufficientScopeError);
    expect((b as InsufficientScopeError).requiredScope).toBe('write_products');
  });

  it('turns HTML, malformed JSON, a list without data and a cut body into ResponseInvalidError', async () => {
    handlers.push((_q, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
    });
    handlers.push((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": [');
    });
    handlers.push(json(200, { items: [] }));
    const c = makeClient(undefined, { retries: { max: 0 } });
    for (let i = 0; i < 3; i++) {
      const err = await c.products.list().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ResponseInvalidError);
      expect((err as ResponseInvalidError).code).toBe('RESPONSE_INVALID');
    }
    // Content-Length promises more than is sent, then the socket is destroyed.
    handlers.push((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data": [{"id":');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    const err = await c.products.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseInvalidError);
  });

  it('retries a GET after a mid-body reset', async () => {
    handlers.push((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data"');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    handlers.push(json(200, listBody));
    const page = await makeClient().products.list();
    expect(page.data).toHaveLength(1);
    expect(seen).toHaveLength(2);
  });
});

describe('retries', () => {
  it('retries 5xx for GET but not for POST', async () => {
    handlers.push(json(503, { error: 'x', code: 'INTERNAL_ERROR' }), json(200, listBody));
    const c = makeClient();
    expect((await c.products.list()).data).toHaveLength(1);
    expect(seen).toHaveLength(2);

    seen = [];
    handlers.push(json(500, { error: 'x', code: 'INTERNAL_ERROR' }), json(201, { id: 'p' }));
    const err = await c.products.create({ name: 'x' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'INTERNAL_ERROR', status: 500 });
    expect(seen).toHaveLength(1);
    handlers = [];
  });

  it('retries a POST that could not connect, and gives up with NetworkError', async () => {
    let calls = 0;
    const refusing: typeof fetch = async () => {
      calls++;
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }),
      });
    };
    const err = await makeClient(undefined, { fetch: refusing })
      .products.create({ name: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(calls).toBe(4);
  });

  it('does not retry a POST whose connection broke after sending', async () => {
    let calls = 0;
    const resetting: typeof fetch = async () => {
      calls++;
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }),
      });
    };
    const err = await makeClient(undefined, { fetch: resetting })
      .products.create({ name: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(calls).toBe(1);
  });

  it('waits Retry-After seconds on 429 and retries a POST the rate limiter refused', async () => {
    const reset = String(Math.floor(Date.now() / 1000) + 30);
    handlers.push(
      json(
        429,
        { error: 'slow', code: 'rate_limited' },
        {
          'retry-after': '1',
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': '5',
          'x-ratelimit-reset': reset,
        },
      ),
    );
    handlers.push(json(201, { id: 'p' }));
    const t0 = Date.now();
    await makeClient().products.create({ name: 'x' });
    // Seconds, not milliseconds (shopify-app-js #3364 read them as ms).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(seen).toHaveLength(2);
  });

  it('never repeats a POST after a 429 that might have been applied (no rate-limit headers)', async () => {
    handlers.push(json(429, { error: 'slow', code: 'rate_limited' }, { 'retry-after': '1' }));
    handlers.push(json(201, { id: 'p' }));
    const err = await makeClient()
      .products.create({ name: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ code: 'rate_limited', mayHaveBeenApplied: true, method: 'POST' });
    expect(seen).toHaveLength(1);
    handlers = [];
  });

  it('a GET waits out a Retry-After longer than retries.maxDelayMs', async () => {
    handlers.push(json(429, { error: 'slow', code: 'rate_limited' }, { 'retry-after': '2' }));
    handlers.push(json(200, listBody));
    const t0 = Date.now();
    const page = await makeClient(undefined, {
      retries: { max: 1, baseDelayMs: 1, maxDelayMs: 500 },
    }).products.list();
    expect(page.data).toHaveLength(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
    expect(seen).toHaveLength(2);
  });

  it('handles a 429 without Retry-After', async () => {
    handlers.push(json(429, { error: 'slow', code: 'rate_limited' }));
    handlers.push(json(200, listBody));
    const page = await makeClient().products.list();
    expect(page.data).toHaveLength(1);
  });

  it('surfaces RateLimitedError with retryAfter in seconds when the wait exceeds maxRateLimitWaitMs', async () => {
    const date = new Date(Date.now() + 120_000).toUTCString();
    handlers.push(json(429, { error: 'slow', code: 'rate_limited' }, { 'retry-after': date }));
    const err = await makeClient(undefined, { maxRateLimitWaitMs: 5000 })
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    const r = err as RateLimitedError;
    expect(r.retryAfter).toBeGreaterThanOrEqual(118);
    expect(r.retryAfter).toBeLessThanOrEqual(121);
    expect(seen).toHaveLength(1);
  });

  it('after a long Retry-After, later calls of that store fail fast instead of hanging', async () => {
    handlers.push(json(429, { error: 'slow', code: 'rate_limited' }, { 'retry-after': '120' }));
    const c = makeClient(undefined, { maxRateLimitWaitMs: 5000 });
    const first = await c.products.list().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RateLimitedError);
    const t0 = Date.now();
    const second = await c.products.get('p1').catch((e: unknown) => e);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(second).toBeInstanceOf(RateLimitedError);
    expect(second).toMatchObject({ code: 'rate_limited', method: 'GET' });
    // The store is held for one window at most (a longer Retry-After is implausible), then asked again.
    expect((second as RateLimitedError).retryAfter).toBeGreaterThanOrEqual(59);
    expect((second as RateLimitedError).retryAfter).toBeLessThanOrEqual(60);
    expect(seen).toHaveLength(1);
  });

  it('parses Retry-After as seconds or HTTP-date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('tokens', () => {
  it('refreshes once on token_expired and replays', async () => {
    handlers.push(json(401, { error: 'expired', code: 'token_expired', details: [] }));
    handlers.push(json(200, listBody));
    const tokens = fakeTokens();
    await makeClient(tokens).products.list();
    expect(tokens.refreshes).toEqual(['tok-1']);
    expect(seen[1]!.headers.authorization).toBe('Bearer tok-2');
  });

  it('gives up with TokenExpiredError when the replay is refused too', async () => {
    handlers.push(json(401, { code: 'token_expired' }), json(401, { code: 'token_expired' }));
    const tokens = fakeTokens();
    const err = await makeClient(tokens)
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenExpiredError);
    expect(tokens.refreshes).toHaveLength(1);
  });

  it('reports token_revoked to the token source (which flags, never purges) and throws TokenRevokedError', async () => {
    handlers.push(json(401, { error: 'revoked', code: 'token_revoked', details: [] }));
    const tokens = fakeTokens();
    const err = await makeClient(tokens)
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRevokedError);
    expect(tokens.revokedCalls).toEqual(['store-1']);
  });
});

describe('time limits and cancellation', () => {
  it('times out a silent platform with TimeoutError', async () => {
    handlers.push(() => {
      /* never answers */
    });
    const err = await makeClient(undefined, { timeoutMs: 100, retries: { max: 0 } })
      .products.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    // On a loaded machine the request may reach the server after the timeout: let it land
    // here, not in the next test's handlers.
    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 10_000 });
  });

  it('honours the caller AbortSignal', async () => {
    const ac = new AbortController();
    // Abort once the server has the request, so it cannot arrive during the next test.
    handlers.push(() => ac.abort());
    const err = await makeClient()
      .products.list({}, { signal: ac.signal })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AbortedError);
  });
});

describe('versioning', () => {
  it('logs Deprecation/Sunset once per process', async () => {
    resetDeprecationNotices();
    warnings.length = 0;
    const h = { deprecation: 'true', sunset: 'Wed, 01 Jul 2027 00:00:00 GMT' };
    handlers.push(json(200, listBody, h), json(200, listBody, h));
    const c = makeClient();
    await c.products.list();
    await c.products.list();
    expect(warnings.filter((w) => w.sunset)).toHaveLength(1);
  });
});
