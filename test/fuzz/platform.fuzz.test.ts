/**
 * Bad-input sweep of the local platform's network entry points over real
 * sockets: /oauth/authorize, the consent decision, /oauth/token (JSON, form,
 * garbage; Basic auth), /oauth/session and /api/v1/*. Properties: never a
 * 5xx, never a secret in a response, and the authorize endpoint never
 * redirects anywhere but the registered redirect URI.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { type Installed, install, pkce, REDIRECT } from '../platform/helpers.js';
import {
  closeAgent,
  expectNo5xx,
  expectNoSecret,
  fcParams,
  mangled,
  nasty,
  queryString,
  type RawResponse,
  RUNS,
  SWEEP_TIMEOUT_MS,
  send,
} from './support.js';

let platform: Platform;
let inst: Installed;
let secrets: string[];
const tried: Record<string, number> = {};
/** Statuses of the /api/v1 sweep: shows the inputs reach the handlers, not only the guard. */
const statuses: Record<number, number> = {};

function check(what: string, res: RawResponse): void {
  tried[what] = (tried[what] ?? 0) + 1;
  expectNo5xx(res, what);
  expectNoSecret(res, secrets);
}

beforeAll(async () => {
  platform = await startPlatform();
  // Elite: no per-minute limit, so thousands of requests test inputs, not the rate limiter.
  inst = await install(platform, {
    tier: 'elite',
    scopes: ['read_products', 'write_products', 'read_orders', 'write_orders', 'read_customers'],
  });
  platform.createStore({ seed: 5 });
  secrets = [inst.clientSecret, inst.webhookSecret, inst.refreshToken, inst.accessToken];
});

afterAll(async () => {
  console.info(
    `platform bad-input sweep: ${JSON.stringify(tried)} (FUZZ_RUNS=${RUNS}); /api/v1 statuses ${JSON.stringify(statuses)}`,
  );
  closeAgent();
  await platform?.close();
});

const contentType = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/x-www-form-urlencoded',
    'text/plain',
    'application/json; charset=latin1',
    'multipart/form-data; boundary=x',
  ),
  nasty(),
);

function formOrJson(
  keys: readonly string[],
  values: fc.Arbitrary<string>,
): fc.Arbitrary<{ body: string; type: string }> {
  const pairs = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...keys), fc.string()), values), {
    maxLength: 9,
  });
  return fc.oneof(
    pairs.map((p) => ({
      body: JSON.stringify(Object.fromEntries(p)),
      type: 'application/json',
    })),
    pairs.map((p) => ({
      body: new URLSearchParams(p).toString(),
      type: 'application/x-www-form-urlencoded',
    })),
    fc
      .tuple(fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ maxLength: 300 })), contentType)
      .map(([body, type]) => ({ body, type })),
    // Valid JSON with the wrong shapes: arrays, numbers, nested objects for strings.
    fc
      .dictionary(
        fc.constantFrom(...keys),
        fc.oneof(fc.integer(), fc.constant(null), fc.array(fc.string()), fc.object()),
      )
      .map((o) => ({ body: JSON.stringify(o), type: 'application/json' })),
  );
}

describe('platform bad-input sweep', () => {
  it(
    'GET /oauth/authorize: never 5xx, no secret, redirects only to the registered redirect URI',
    async () => {
      const { challenge } = pkce();
      const values = nasty([
        inst.clientId,
        REDIRECT,
        'code',
        'token',
        'S256',
        'plain',
        'read_products',
        'read_products,write_products',
        challenge,
        inst.storeId,
      ]);
      await fc.assert(
        fc.asyncProperty(
          queryString(
            [
              'client_id',
              'redirect_uri',
              'scope',
              'state',
              'response_type',
              'code_challenge',
              'code_challenge_method',
              'store_id',
            ],
            values,
          ),
          async (query) => {
            const res = await send(platform.url, { path: `/oauth/authorize?${query}` });
            check('GET /oauth/authorize', res);
            if (res.status >= 300 && res.status < 400) {
              expect(String(res.headers.location).startsWith(`${REDIRECT}?`)).toBe(true);
            }
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'POST /oauth/authorize/decision: never 5xx, no secret',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          formOrJson(
            ['request_id', 'decision', 'store_id'],
            nasty(['approve', 'deny', inst.storeId]),
          ),
          fc.option(fc.oneof(fc.constant(platform.url), nasty()), { nil: undefined }),
          async ({ body, type }, origin) => {
            const res = await send(platform.url, {
              method: 'POST',
              path: '/oauth/authorize/decision',
              headers: { 'content-type': type, ...(origin === undefined ? {} : { origin }) },
              body,
            });
            check('POST /oauth/authorize/decision', res);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'POST /oauth/token (JSON, form, garbage; Basic auth): never 5xx, no secret, no token unless 200',
    async () => {
      const values = fc.oneof(
        nasty([inst.clientId, inst.clientSecret, 'authorization_code', 'refresh_token', REDIRECT]),
        mangled(inst.refreshToken),
        mangled(inst.code),
        mangled(inst.verifier),
      );
      const basic = fc.oneof(
        fc.constant(undefined),
        fc
          .tuple(
            fc.oneof(fc.constant(inst.clientId), nasty()),
            fc.oneof(nasty(), mangled(inst.clientSecret)),
          )
          .map(([id, secret]) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`),
        nasty().map((s) => `Basic ${s}`),
      );
      await fc.assert(
        fc.asyncProperty(
          formOrJson(
            [
              'grant_type',
              'client_id',
              'client_secret',
              'code',
              'redirect_uri',
              'code_verifier',
              'refresh_token',
              'scope',
            ],
            values,
          ),
          basic,
          fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT'),
          async ({ body, type }, authorization, method) => {
            const res = await send(platform.url, {
              method,
              path: '/oauth/token',
              headers: {
                'content-type': type,
                ...(authorization === undefined ? {} : { authorization }),
              },
              body,
            });
            check('/oauth/token', res);
            if (res.status !== 200) expect(res.body).not.toContain('access_token');
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'GET /oauth/session: never 5xx, no secret, forged bearers refused',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            mangled(inst.accessToken).map((t) => `Bearer ${t}`),
            nasty().map((t) => `Bearer ${t}`),
            nasty(),
          ),
          async (authorization) => {
            const res = await send(platform.url, {
              path: '/oauth/session',
              headers: { authorization },
            });
            check('GET /oauth/session', res);
            expect(res.status).toBeGreaterThanOrEqual(400);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    '/api/v1/*: generated methods, paths, queries, headers and bodies never get a 5xx',
    async () => {
      // The real routes (ids generated), plus arbitrary segments for the 404 paths.
      const routes = [
        '/analytics/overview',
        '/analytics/sales',
        '/analytics/top-products',
        '/collections',
        '/content/pages',
        '/content/blog',
        '/customers',
        '/customers/:id',
        '/discounts',
        '/discounts/:id',
        '/draft-orders',
        '/orders',
        '/orders/:id',
        '/orders/:id/fulfill',
        '/orders/:id/refund',
        '/products',
        '/products/:id',
        '/products/:id/inventory',
        '/products/:id/variants',
        '/shipping/carriers',
        '/shipping/labels',
        '/shipping/rates',
        '/shipping/zones',
        '/stores/current',
        '/stores/settings',
      ];
      const route = fc.oneof(
        {
          weight: 8,
          arbitrary: fc
            .tuple(fc.constantFrom(...routes), fc.oneof(fc.uuid(), nasty()))
            .map(([r, id]) => r.replace(':id', encodeURIComponent(id))),
        },
        {
          weight: 1,
          arbitrary: fc
            .array(nasty(), { minLength: 1, maxLength: 3 })
            .map((segs) => `/${segs.map((x) => encodeURIComponent(x)).join('/')}`),
        },
      );
      const path = fc
        .tuple(
          route,
          queryString(
            [
              'limit',
              'cursor',
              'page',
              'sort',
              'order',
              'status',
              'from',
              'to',
              'granularity',
              'q',
              'fulfillment_status',
              'created_after',
            ],
            nasty(['10', '0', '-1', '1000', 'created_at', 'desc', 'open', 'day', '2026-01-01']),
          ),
        )
        .map(([r, q]) => `/api/v1${r}?${q}`);
      const body = fc.oneof(
        fc.constant(undefined),
        fc.json({ maxDepth: 3 }),
        fc
          .record(
            {
              name: nasty(),
              title: nasty(),
              price: fc.oneof(fc.double(), nasty()),
              status: nasty(['active', 'draft']),
              email: nasty(),
              items: fc.array(fc.object(), { maxLength: 3 }),
              set: fc.oneof(fc.integer(), nasty()),
            },
            { requiredKeys: [] },
          )
          .map((o) => JSON.stringify(o)),
        fc.string({ maxLength: 300 }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'),
          path,
          body,
          fc.oneof(
            { weight: 8, arbitrary: fc.constant(`Bearer ${inst.accessToken}`) },
            { weight: 1, arbitrary: mangled(inst.accessToken).map((t) => `Bearer ${t}`) },
            { weight: 1, arbitrary: nasty() },
          ),
          fc.oneof(
            { weight: 8, arbitrary: fc.constant(inst.storeId) },
            { weight: 1, arbitrary: nasty() },
          ),
          contentType,
          async (method, p, b, authorization, storeId, type) => {
            const res = await send(platform.url, {
              method,
              path: p,
              headers: { authorization, 'x-store-id': storeId, 'content-type': type },
              ...(b === undefined ? {} : { body: b }),
            });
            check('/api/v1', res);
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );
});
