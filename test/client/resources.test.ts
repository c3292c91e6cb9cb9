/**
 * Every resource group of the client against the local platform over a real
 * socket: the paths, methods, bodies and envelopes line up with the platform.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConflictError,
  InsufficientScopeError,
  NotFoundError,
  ValidationError,
} from '../../src/client/errors.js';
import type { StoreApiClient } from '../../src/client/index.js';
import { createFixture, type Fixture } from './setup.js';

let fx: Fixture;
let client: StoreApiClient;

beforeAll(async () => {
  fx = await createFixture();
  const inst = await fx.install({ seed: 40 });
  client = fx.runtime().client(inst.storeId);
});
afterAll(async () => {
  await fx?.close();
});

describe('products, variants, inventory, collections', () => {
  it('creates, reads, updates, lists and deletes a product', async () => {
    const created = await client.products.create({ name: 'Mug', price: 12.5, status: 'active' });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.name).toBe('Mug');
    const got = await client.products.get(created.id);
    expect(got.price).toBe(12.5);
    const updated = await client.products.update(created.id, { name: 'Big mug' });
    expect(updated.name).toBe('Big mug');
    const page = await client.products.list({ limit: 2, sort: 'name', order: 'asc' });
    expect(page.data).toHaveLength(2);
    expect(page.pagination.total).toBe(41);
    expect(page.pagination.hasMore).toBe(true);
    await client.products.delete(created.id);
    await expect(client.products.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('maps a 422 to ValidationError naming the field', async () => {
    const err = await client.products.create({} as { name: string }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    const v = err as ValidationError;
    expect(v.code).toBe('VALIDATION_ERROR');
    expect(v.status).toBe(422);
    expect(v.fields).toHaveProperty('name');
    expect(v.method).toBe('POST');
    expect(v.path).toBe('/api/v1/products');
  });

  it('adds and lists variants, reads and adjusts inventory', async () => {
    const p = await client.products.create({ name: 'Shirt', price: 20, inventoryQuantity: 5 });
    const v = await client.products.variants.create(p.id, { title: 'Large', inventoryQuantity: 3 });
    expect(v.productId).toBe(p.id);
    const vs = await client.products.variants.list(p.id);
    expect(vs.data.map((x) => x.id)).toContain(v.id);

    const before = await client.inventory.get(p.id);
    expect(before).toBeTypeOf('object');
    await client.inventory.set(p.id, 10, { variantId: v.id });
    await client.inventory.adjust(p.id, -4, { variantId: v.id });
    await client.inventory.adjust(p.id, 1, { variantId: v.id });
    const after = await client.products.variants.list(p.id);
    expect(after.data.find((x) => x.id === v.id)?.inventoryQuantity).toBe(7);
    const err = await client.inventory
      .adjust(p.id, -100, { variantId: v.id })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).platformCode).toBe('INSUFFICIENT_STOCK');
  });

  it('creates and lists collections', async () => {
    const c = await client.collections.create({ name: 'Summer' });
    const page = await client.collections.list();
    expect(page.data.map((x) => x.id)).toContain(c.id);
  });
});

describe('orders, draft orders, customers', () => {
  it('lists with filters, reads, updates, fulfils and refunds an order', async () => {
    const open = await client.orders.list({
      status: 'open',
      fulfillment_status: 'unfulfilled',
      created_before: new Date(Date.now() + 86_400_000).toISOString(),
      limit: 5,
    });
    expect(open.data.length).toBeGreaterThan(0);
    expect(
      open.data.every((o) => o.status === 'open' && o.fulfillmentStatus === 'unfulfilled'),
    ).toBe(true);
    const future = await client.orders.list({
      created_after: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(future.data).toHaveLength(0);
    const id = open.data[0]!.id;
    const got = await client.orders.get(id);
    expect(got.items.length).toBeGreaterThan(0);
    const updated = await client.orders.update(id, { notes: 'gift wrap' });
    expect(updated.id).toBe(id);
    const f = await client.orders.fulfill(id, { trackingNumber: 'TRACK1' });
    expect(f.id).toBeTypeOf('string');
    const r = await client.orders.refund(id, { amount: 0.01, reason: 'test' });
    expect(r.id).toBeTypeOf('string');
  });

  it('creates a draft order', async () => {
    const products = await client.products.list({ limit: 1 });
    const d = await client.draftOrders.create({
      customerEmail: 'a@example.com',
      items: [{ productId: products.data[0]!.id, quantity: 1 }],
    });
    expect(d.id).toBeTypeOf('string');
  });

  it('creates, reads, updates and lists customers', async () => {
    const c = await client.customers.create({ email: 'new@example.com', firstName: 'Ann' });
    expect((await client.customers.get(c.id)).email).toBe('new@example.com');
    await client.customers.update(c.id, { email: 'ann@example.com' });
    const page = await client.customers.list({ sort: 'email' });
    expect(page.data.length).toBeGreaterThan(0);
  });
});

describe('shipping, discounts, content, analytics, store', () => {
  it('lists zones and carriers, quotes rates and buys a label', async () => {
    const zones = await client.shipping.zones();
    expect(Array.isArray(zones.data)).toBe(true);
    const carriers = await client.shipping.carriers();
    expect(carriers.data.length).toBeGreaterThan(0);
    const products = await client.products.list({ limit: 1 });
    const quote = await client.shipping.rates({
      shippingAddress: { line1: '1 Main St', city: 'Paris', country: 'FR' },
      items: [{ productId: products.data[0]!.id, quantity: 1 }],
    });
    expect(Array.isArray(quote.data)).toBe(true);
    const order = (await client.orders.list({ status: 'open', limit: 1 })).data[0]!;
    const label = await client.shipping.createLabel({
      orderId: order.id,
      carrier: String(carriers.data[0]!.code),
    });
    expect(label.trackingNumber).toBeTypeOf('string');
  });

  it('creates, updates, lists and deletes discounts', async () => {
    const d = await client.discounts.create({ code: 'SAVE10', type: 'percentage', value: 10 });
    await client.discounts.update(d.id, { value: 15 });
    const page = await client.discounts.list();
    expect(page.data.map((x) => x.id)).toContain(d.id);
    await client.discounts.delete(d.id);
    await expect(client.discounts.delete(d.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('creates and lists pages and blog posts', async () => {
    const page = await client.content.pages.create({ title: 'About', body: 'Hi' });
    expect((await client.content.pages.list()).data.map((x) => x.id)).toContain(page.id);
    const post = await client.content.blog.create({ title: 'News', tags: ['a'] });
    expect((await client.content.blog.list()).data.map((x) => x.id)).toContain(post.id);
  });

  it('reads analytics and store settings', async () => {
    const overview = await client.analytics.overview();
    expect(overview).toHaveProperty('currency');
    const sales = await client.analytics.sales({ granularity: 'week' });
    expect(sales.granularity).toBe('week');
    const top = await client.analytics.topProducts({ limit: 3 });
    expect(top).toBeTypeOf('object');
    const store = await client.store.current();
    expect(store.id).toBe(client.storeId);
    const settings = await client.store.settings();
    expect(settings).toHaveProperty('currencies');
  });

  it('names the missing scope when the installation lacks it', async () => {
    const narrow = await fx.install({ scopes: ['read_products'] });
    const c = fx.runtime().client(narrow.storeId);
    const err = await c.orders.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientScopeError);
    expect(err).toMatchObject({
      code: 'insufficient_scope',
      status: 403,
      requiredScope: 'read_orders',
    });
  });

  it('reaches anything else through request()', async () => {
    const body = await client.request<{ data: unknown[] }>('GET', '/products', {
      query: { limit: 1 },
    });
    expect(body.data).toHaveLength(1);
  });
});
