/** Every resource group once through the real platform: real token, guard, scopes and store id. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Platform, startPlatform } from '../../../src/platform/index.js';
import { ALL_SCOPES, realClient } from './helpers.js';

let platform: Platform;
let api: Awaited<ReturnType<typeof realClient>>['call'];
let storeId: string;

beforeAll(async () => {
  platform = await startPlatform();
  storeId = platform.createStore({ name: 'Real store', seed: 20 }).storeId;
  api = (await realClient(platform, ALL_SCOPES, storeId)).call;
});
afterAll(() => platform.close());

describe('resource API through the real platform', () => {
  it('products, variants, collections and inventory', async () => {
    const list = await api('GET', '/products?limit=5&sort=price&order=asc');
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(5);
    expect(list.body.pagination).toMatchObject({ hasMore: true, total: 20 });
    const next = await api(
      'GET',
      `/products?limit=5&sort=price&order=asc&cursor=${list.body.pagination!.nextCursor}`,
    );
    expect(next.body.data![0]!.price).toBeGreaterThanOrEqual(list.body.data![4]!.price as number);
    const created = await api('POST', '/products', { name: 'Real product', price: 12.5 });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(
      (await api('POST', `/products/${id}/variants`, { title: 'Blue', inventoryQuantity: 2 }))
        .status,
    ).toBe(201);
    expect((await api('GET', `/products/${id}/variants`)).body.data).toHaveLength(1);
    expect((await api('POST', '/collections', { name: 'Real', productIds: [id] })).status).toBe(
      201,
    );
    expect((await api('GET', '/collections')).body.pagination).toMatchObject({ total: 1 });
    const variantId = (
      (await api('GET', `/products/${id}`)).body.variants as Array<{ id: string }>
    )[0]!.id;
    const inv = await api('PUT', `/products/${id}/inventory`, { variantId, decrement: 5 });
    expect(inv.status).toBe(409);
    expect(inv.body.code).toBe('INSUFFICIENT_STOCK');
    expect((await api('GET', `/products/${id}/inventory`)).body.inventoryQuantity).toBe(2);
    expect((await api('PUT', `/products/${id}`, { name: 'Renamed' })).body.name).toBe('Renamed');
    expect((await api('DELETE', `/products/${id}`)).status).toBe(204);
    expect((await api('GET', `/products/${id}`)).status).toBe(404);
    const malformed = await api('POST', '/products', undefined);
    expect(malformed.status).toBe(422);
  });

  it('orders, fulfillment, refunds and draft orders', async () => {
    const orders = await api('GET', '/orders?status=open&limit=3');
    expect(orders.status).toBe(200);
    const all = await api('GET', '/orders?limit=250');
    const order =
      all.body.data!.find(
        (o) =>
          o.status !== 'cancelled' &&
          o.fulfillmentStatus === 'unfulfilled' &&
          o.financialStatus === 'paid',
      ) ?? all.body.data!.find((o) => o.status !== 'cancelled' && o.financialStatus === 'paid')!;
    const detail = await api('GET', `/orders/${order.id}`);
    expect(detail.body).toHaveProperty('items');
    expect((await api('PUT', `/orders/${order.id}`, { notes: 'checked' })).body.notes).toBe(
      'checked',
    );
    if (order.fulfillmentStatus !== 'fulfilled') {
      expect(
        (await api('POST', `/orders/${order.id}/fulfill`, { trackingNumber: 'RT1' })).status,
      ).toBe(201);
    }
    const refund = await api('POST', `/orders/${order.id}/refund`, { amount: 0.01 });
    expect(refund.status).toBe(201);
    expect(refund.body.financialStatus).toBe('partially_refunded');
    const product = (await api('GET', '/products?limit=1')).body.data![0]!;
    const draft = await api('POST', '/draft-orders', {
      customerEmail: 'd@x.io',
      items: [{ productId: product.id, quantity: 1 }],
    });
    expect(draft.status).toBe(201);
  });

  it('customers with order history', async () => {
    const list = await api('GET', '/customers?sort=email&order=asc');
    expect(list.status).toBe(200);
    const c = list.body.data![0]!;
    expect((await api('GET', `/customers/${c.id}`)).body).toHaveProperty('orders');
    expect((await api('POST', '/customers', { email: 'real@x.io' })).status).toBe(201);
    expect((await api('POST', '/customers', { email: 'real@x.io' })).status).toBe(409);
    expect((await api('PUT', `/customers/${c.id}`, { note: 'hi' })).body.note).toBe('hi');
  });

  it('shipping, discounts, content, analytics and store settings', async () => {
    expect((await api('GET', '/shipping/zones')).body.data).toHaveLength(3);
    expect((await api('GET', '/shipping/carriers')).body.data).toHaveLength(3);
    const order = (await api('GET', '/orders?status=closed&limit=1')).body.data![0]!;
    expect(
      (await api('POST', '/shipping/labels', { orderId: order.id, carrier: 'usps' })).status,
    ).toBe(201);
    const product = (await api('GET', '/products?limit=1')).body.data![0]!;
    const rates = await api('POST', '/shipping/rates', {
      shippingAddress: { line1: '1 A', city: 'B', country: 'US' },
      items: [{ productId: product.id, quantity: 1 }],
    });
    expect(rates.status).toBe(200);
    expect(
      (await api('POST', '/discounts', { code: 'REAL', type: 'percentage', value: 5 })).status,
    ).toBe(201);
    expect(
      (await api('POST', '/discounts', { code: 'real', type: 'percentage', value: 5 })).status,
    ).toBe(409);
    expect((await api('GET', '/discounts')).body.pagination).toMatchObject({ total: 1 });
    expect((await api('POST', '/content/pages', { title: 'FAQ' })).status).toBe(201);
    expect((await api('POST', '/content/blog', { title: 'News' })).status).toBe(201);
    expect((await api('GET', '/content/blog')).body.data).toHaveLength(1);
    const overview = await api('GET', '/analytics/overview');
    expect(overview.status).toBe(200);
    expect(overview.body.orders).toBeGreaterThan(0);
    expect((await api('GET', '/analytics/sales?granularity=week')).status).toBe(200);
    expect((await api('GET', '/analytics/top-products?limit=3')).body.data).toHaveLength(3);
    expect((await api('GET', '/stores/current')).body).toMatchObject({
      id: storeId,
      name: 'Real store',
    });
    expect((await api('GET', '/stores/settings')).status).toBe(200);
  });

  it('enforces scopes and store isolation with real tokens', async () => {
    const narrow = await realClient(platform, ['read_products'], storeId);
    const denied = await narrow.call('POST', '/products', { name: 'x' });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({
      code: 'insufficient_scope',
      requiredScope: 'write_products',
    });
    expect(denied.headers.get('www-authenticate')).toContain('scope="write_products"');
    expect((await narrow.call('GET', '/orders')).status).toBe(403);
    // Another store's token never sees this store's products.
    const other = await realClient(platform, ['read_products', 'write_products']);
    const mine = (await api('GET', '/products?limit=1')).body.data![0]!;
    expect((await other.call('GET', `/products/${mine.id}`)).status).toBe(404);
    expect((await other.call('GET', '/products')).body.pagination).toMatchObject({ total: 0 });
  });

  it('keeps error bodies in the document shape for malformed requests', async () => {
    const res = await fetch(`${platform.apiUrl}/products`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${(await realClient(platform, ['write_products'], storeId)).installed.accessToken}`,
        'x-store-id': storeId,
        'content-type': 'application/json',
      },
      body: '{"name":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'INVALID_JSON', details: [] });
    const { call } = await realClient(platform, ['write_products'], storeId);
    const big = await call('POST', '/products', {
      name: 'big',
      description: 'x'.repeat(1_100_000),
    });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
