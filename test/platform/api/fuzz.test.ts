/** Property: no body, however malformed, gets a 500 from any write endpoint. */
import fc from 'fast-check';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder } from '../../../src/platform/api/index.js';
import { ALL_SCOPES, createTestApi, type TestApi } from './helpers.js';

let t: TestApi;
let endpoints: Array<['post' | 'put', string]>;

beforeAll(async () => {
  t = createTestApi();
  const p = (await t.as().post('/products', { name: 'Fuzz', variants: [{ title: 'A' }] })).body;
  const o = createOrder(t.deps, t.storeId, {
    customerEmail: 'f@x.io',
    items: [{ productId: p.id, quantity: 1 }],
  });
  const c = (await t.as().post('/customers', { email: 'fuzz@x.io' })).body;
  const d = (await t.as().post('/discounts', { code: 'FUZZ', type: 'free_shipping' })).body;
  endpoints = [
    ['post', '/products'],
    ['put', `/products/${p.id}`],
    ['post', `/products/${p.id}/variants`],
    ['put', `/products/${p.id}/inventory`],
    ['post', '/collections'],
    ['put', `/orders/${o.id}`],
    ['post', `/orders/${o.id}/fulfill`],
    ['post', `/orders/${o.id}/refund`],
    ['post', '/draft-orders'],
    ['post', '/customers'],
    ['put', `/customers/${c.id}`],
    ['post', '/shipping/labels'],
    ['post', '/shipping/rates'],
    ['post', '/discounts'],
    ['put', `/discounts/${d.id}`],
    ['post', '/content/pages'],
    ['post', '/content/blog'],
  ];
});
afterAll(() => t.close());

const FIELDS = [
  'name',
  'title',
  'price',
  'items',
  'productId',
  'quantity',
  'set',
  'increment',
  'variantId',
  'email',
  'code',
  'type',
  'value',
  'status',
  'amount',
  'trackingNumber',
  'shippingAddress',
  'addresses',
  'images',
  'tags',
  'metadata',
  'options',
  'orderId',
  'carrier',
  'startsAt',
  'endsAt',
  'slug',
  'productIds',
  'variants',
  '__proto__',
  'constructor',
];

const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom(...FIELDS), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
);

describe('fuzzed bodies', () => {
  it('answer 2xx or a documented 4xx, never 500', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 16 }), body, async (i, value) => {
        const [method, path] = endpoints[i]!;
        const res = await supertest(t.app)
          [method](`/api/v1${path}`)
          .set({ 'x-test-store': t.storeId, 'x-test-scopes': ALL_SCOPES.join(',') })
          .set('content-type', 'application/json')
          .send(JSON.stringify(value));
        expect([200, 201, 400, 404, 409, 413, 415, 422]).toContain(res.status);
        if (res.status >= 400) expect(typeof res.body.code).toBe('string');
      }),
      { numRuns: 300 },
    );
  });
});
