/**
 * The OpenAPI document: valid OpenAPI 3.1 by an independent validator, served
 * by the local platform, and true of its live responses: every endpoint is
 * called over a real socket and its body checked against the document with
 * every object closed (`additionalProperties: false`), so a field the platform
 * returns but the schemas do not name fails, as does a named required field
 * that is missing or of another type.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OpenApiDocument, openApiDocument } from '../../src/openapi/index.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { endpoints } from '../../src/schemas/endpoints.js';
import { ALL_SCOPES } from '../platform/api/helpers.js';
import { install } from '../platform/helpers.js';

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(openApiDocument());
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has one operation per endpoint of the schemas, each with its scope', () => {
    const doc = openApiDocument();
    for (const e of endpoints) {
      const op = doc.paths[e.path]?.[e.method.toLowerCase()];
      expect(op, `${e.method} ${e.path}`).toBeDefined();
      expect(op.security).toEqual([{ bearer: [e.scope] }]);
    }
  });
});

/** Closes every object schema so undocumented response fields fail validation. */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = closed(v);
  if (out['type'] === 'object' && out['properties'] && out['additionalProperties'] === undefined) {
    out['additionalProperties'] = false;
  }
  return out;
}

describe('live responses of the local platform', () => {
  let platform: Platform;
  let token: string;
  let storeId: string;
  let doc: OpenApiDocument;
  const ajv = new Ajv2020.default({ strict: false, allErrors: true, multipleOfPrecision: 6 });
  addFormats.default(ajv);
  const checked = new Set<string>();

  beforeAll(async () => {
    platform = await startPlatform({ logger: false });
    storeId = platform.createStore({ name: 'OpenAPI store', seed: 20 }).storeId;
    ({ accessToken: token } = await install(platform, { scopes: ALL_SCOPES, storeId }));
    const res = await fetch(`${platform.apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as OpenApiDocument;
    ajv.addSchema(closed(doc) as object, 'openapi.json');
  });
  afterAll(() => platform?.close());

  it('serves the document at /api/v1/openapi.json without a token, with its own URLs', () => {
    expect(doc).toEqual(openApiDocument({ authUrl: platform.url }));
    expect(doc.servers).toEqual([{ url: `${platform.url}/api/v1`, description: '{base_url}' }]);
  });

  /** Calls `method path` (documented as `template`) and checks the body against the document. */
  async function call(method: string, template: string, path: string, body?: unknown) {
    const res = await fetch(`${platform.apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'x-store-id': storeId,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const op = doc.paths[template]?.[method.toLowerCase()];
    expect(op, `${method} ${template} is documented`).toBeDefined();
    const status = String(res.status);
    expect(Object.keys(op.responses), `${method} ${path} answered ${status}`).toContain(status);
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBeLessThan(300);
    checked.add(`${method} ${template}`);
    if (res.status === 204) return undefined;
    const json = await res.json();
    const pointer = `openapi.json#/paths/${template.replaceAll('~', '~0').replaceAll('/', '~1')}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
    const validate = ajv.getSchema(pointer) ?? ajv.compile({ $ref: pointer });
    const ok = validate(json);
    expect(ok ? [] : validate.errors, `${method} ${path}`).toEqual([]);
    // biome-ignore lint/suspicious/noExplicitAny: a JSON body
    return json as any;
  }

  it('every endpoint answers what the document says, field for field', async () => {
    const products = await call('GET', '/products', '/products?limit=3&sort=price');
    const pid = products.data[0].id;
    await call('GET', '/products/{id}', `/products/${pid}`);
    const created = await call('POST', '/products', '/products', {
      name: 'Mug',
      price: 12.5,
      images: [{ url: 'https://example.com/mug.png' }],
      metadata: { origin: 'test' },
    });
    await call('PUT', '/products/{id}', `/products/${created.id}`, { status: 'active' });
    await call('PUT', '/products/{id}/inventory', `/products/${created.id}/inventory`, { set: 4 });
    await call('GET', '/products/{id}/inventory', `/products/${pid}/inventory`);
    await call('GET', '/products/{id}/variants', `/products/${pid}/variants`);
    await call('POST', '/products/{id}/variants', `/products/${created.id}/variants`, {
      title: 'Large',
      options: { size: 'L' },
    });
    await call('POST', '/collections', '/collections', { name: 'Summer', productIds: [pid] });
    await call('GET', '/collections', '/collections?sort=name');
    const orders = await call(
      'GET',
      '/orders',
      '/orders?limit=5&status=open&fulfillment_status=unfulfilled&sort=total',
    );
    const oid = orders.data[0].id;
    await call('GET', '/orders/{id}', `/orders/${oid}`);
    await call('PUT', '/orders/{id}', `/orders/${oid}`, { notes: 'gift', tags: ['vip'] });
    await call('POST', '/orders/{id}/refund', `/orders/${oid}/refund`, { amount: 1 });
    await call('POST', '/shipping/labels', '/shipping/labels', { orderId: oid, carrier: 'ups' });
    await call('POST', '/orders/{id}/fulfill', `/orders/${oid}/fulfill`, { trackingNumber: 'T1' });
    await call('GET', '/orders/{id}', `/orders/${oid}`);
    await call('POST', '/draft-orders', '/draft-orders', {
      customerEmail: 'draft@example.com',
      items: [{ productId: pid, quantity: 2 }],
      shippingAddress: { line1: '1 Main St', city: 'Springfield', country: 'US' },
    });
    await call('POST', '/draft-orders', '/draft-orders', {
      customerEmail: 'bare@example.com',
      items: [{ productId: pid, quantity: 1 }],
    });
    const customers = await call('GET', '/customers', '/customers?sort=email');
    await call('GET', '/customers/{id}', `/customers/${customers.data[0].id}`);
    const customer = await call('POST', '/customers', '/customers', {
      email: 'new@example.com',
      firstName: 'Ada',
      addresses: [{ line1: '1 Main St', city: 'Springfield', country: 'US' }],
    });
    await call('PUT', '/customers/{id}', `/customers/${customer.id}`, { acceptsMarketing: true });
    await call('GET', '/shipping/zones', '/shipping/zones');
    await call('GET', '/shipping/carriers', '/shipping/carriers');
    await call('POST', '/shipping/rates', '/shipping/rates', {
      shippingAddress: { line1: '1 Main St', city: 'Springfield', country: 'US' },
      items: [{ productId: pid, quantity: 1 }],
    });
    const discount = await call('POST', '/discounts', '/discounts', {
      code: 'save10',
      type: 'percentage',
      value: 10,
      usageLimit: 5,
      endsAt: '2030-01-01T00:00:00Z',
    });
    await call('PUT', '/discounts/{id}', `/discounts/${discount.id}`, { active: false });
    await call('GET', '/discounts', '/discounts?sort=code');
    await call('DELETE', '/discounts/{id}', `/discounts/${discount.id}`);
    await call('POST', '/content/pages', '/content/pages', { title: 'About us' });
    await call('GET', '/content/pages', '/content/pages');
    await call('POST', '/content/blog', '/content/blog', { title: 'News', published: true });
    await call('GET', '/content/blog', '/content/blog');
    await call('GET', '/analytics/overview', '/analytics/overview');
    await call('GET', '/analytics/sales', '/analytics/sales?granularity=week');
    await call('GET', '/analytics/top-products', '/analytics/top-products?limit=5');
    await call('GET', '/stores/current', '/stores/current');
    await call('GET', '/stores/settings', '/stores/settings');
    await call('DELETE', '/products/{id}', `/products/${created.id}`);

    expect([...checked].sort()).toEqual(endpoints.map((e) => `${e.method} ${e.path}`).sort());
  });

  it('the session check answers what the document says', async () => {
    const res = await fetch(`${platform.authUrl}/oauth/session`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    const pointer =
      'openapi.json#/paths/~1oauth~1session/get/responses/200/content/application~1json/schema';
    const validate = ajv.compile({ $ref: pointer });
    const body = await res.json();
    expect(validate(body) ? [] : validate.errors).toEqual([]);
  });
});
