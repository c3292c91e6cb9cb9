import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder, createStore, getStore, listStores } from '../../../src/platform/api/index.js';
import { createTestApi, type TestApi, UNKNOWN_ID } from './helpers.js';

let t: TestApi;
beforeAll(() => {
  t = createTestApi();
});
afterAll(() => t.close());

describe('customers', () => {
  it('creates a customer with addresses and shows the order history', async () => {
    const { body: c } = await t
      .as()
      .post('/customers', {
        email: 'Ana@Example.com',
        firstName: 'Ana',
        lastName: 'Silva',
        tags: ['vip'],
        addresses: [
          { line1: '1 Rua', city: 'Lisbon', country: 'PT' },
          { line1: '2 Main', city: 'Austin', country: 'US', default: true },
        ],
      })
      .expect(201);
    expect(c).toMatchObject({
      email: 'ana@example.com',
      firstName: 'Ana',
      acceptsMarketing: false,
      tags: ['vip'],
      ordersCount: 0,
      totalSpent: 0,
      orders: [],
    });
    expect(c.addresses.map((a: { default: boolean }) => a.default)).toEqual([false, true]);
    expect(c.addresses[0].id).toMatch(/^[0-9a-f-]{36}$/);
    const { body: p } = await t.as().post('/products', { name: 'Soap', price: 10 }).expect(201);
    const o = createOrder(t.deps, t.storeId, {
      customerId: c.id,
      items: [{ productId: p.id, quantity: 5 }],
    });
    const { body } = await t.as().get(`/customers/${c.id}`).expect(200);
    expect(body.orders).toEqual([
      expect.objectContaining({ id: o.id, orderNumber: o.orderNumber, total: 54, status: 'open' }),
    ]);
    expect(body).toMatchObject({ ordersCount: 1, totalSpent: 54 });
    expect(o.customerEmail).toBe('ana@example.com');
  });

  it('updates a profile, refuses a taken e-mail with 409, validates and 404s', async () => {
    const { body: a } = await t.as().post('/customers', { email: 'a@shop.test' }).expect(201);
    await t.as().post('/customers', { email: 'b@shop.test' }).expect(201);
    expect((await t.as().post('/customers', { email: 'A@shop.test' }).expect(409)).body.code).toBe(
      'CONFLICT',
    );
    const { body: u } = await t
      .as()
      .put(`/customers/${a.id}`, { firstName: 'Al', acceptsMarketing: true })
      .expect(200);
    expect(u).toMatchObject({ email: 'a@shop.test', firstName: 'Al', acceptsMarketing: true });
    expect(
      (await t.as().put(`/customers/${a.id}`, { email: 'b@shop.test' }).expect(409)).body.details[0]
        .field,
    ).toBe('email');
    const bad = await t
      .as()
      .post('/customers', { email: 'nope', addresses: [{ city: 'x' }] })
      .expect(422);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'addresses[0].country',
      'addresses[0].line1',
      'email',
    ]);
    await t.as().get(`/customers/${UNKNOWN_ID}`).expect(404);
    await t.as().put('/customers/zzz', { firstName: 'x' }).expect(404);
    const list = await t.as().get('/customers?sort=email&order=asc').expect(200);
    const emails = list.body.data.map((c: { email: string }) => c.email);
    expect(emails).toEqual([...emails].sort());
    expect(
      (
        await t
          .as({ scopes: ['read_customers'] })
          .post('/customers', { email: 'c@x.io' })
          .expect(403)
      ).body.requiredScope,
    ).toBe('write_customers');
  });
});

describe('shipping', () => {
  it('lists zones with rates and carriers', async () => {
    const zones = await t.as().get('/shipping/zones').expect(200);
    expect(zones.body.data.map((z: { name: string }) => z.name)).toEqual([
      'Domestic',
      'Europe',
      'Rest of world',
    ]);
    expect(zones.body.data[0].rates[0]).toMatchObject({
      name: 'Standard',
      price: 5.99,
      currency: 'USD',
    });
    const carriers = await t.as().get('/shipping/carriers').expect(200);
    expect(carriers.body.data.map((c: { code: string }) => c.code)).toEqual([
      'ups',
      'fedex',
      'usps',
    ]);
    expect(carriers.body.pagination.total).toBe(3);
  });

  it('calculates rates for a cart by destination and subtotal', async () => {
    const { body: p } = await t
      .as()
      .post('/products', { name: 'Lamp', price: 20, weight: 1 })
      .expect(201);
    const cheap = await t
      .as()
      .post('/shipping/rates', {
        shippingAddress: { line1: 'x', city: 'y', country: 'US' },
        items: [{ productId: p.id, quantity: 1 }],
      })
      .expect(200);
    expect(cheap.body.data.map((r: { name: string }) => r.name)).toEqual(['Standard', 'Express']);
    expect(cheap.body.subtotal).toBe(20);
    const free = await t
      .as()
      .post('/shipping/rates', {
        shippingAddress: { line1: 'x', city: 'y', country: 'US' },
        items: [{ productId: p.id, quantity: 3 }],
      })
      .expect(200);
    expect(free.body.data.map((r: { name: string; price: number }) => [r.name, r.price])).toEqual([
      ['Free shipping', 0],
      ['Express', 20.49],
    ]);
    const de = await t
      .as()
      .post('/shipping/rates', {
        shippingAddress: { line1: 'x', city: 'y', country: 'DE' },
        items: [{ productId: p.id, quantity: 1 }],
      })
      .expect(200);
    expect(de.body.data.map((r: { zoneName: string }) => r.zoneName)).toEqual(['Europe']);
    const jp = await t
      .as()
      .post('/shipping/rates', {
        shippingAddress: { line1: 'x', city: 'y', country: 'JP' },
        items: [{ productId: p.id, quantity: 1 }],
      })
      .expect(200);
    expect(jp.body.data[0].zoneName).toBe('Rest of world');
    const bad = await t
      .as()
      .post('/shipping/rates', { items: [{ productId: UNKNOWN_ID, quantity: 1 }] })
      .expect(422);
    expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual(['shippingAddress']);
    const unknown = await t
      .as()
      .post('/shipping/rates', {
        shippingAddress: { line1: 'x', city: 'y', country: 'US' },
        items: [{ productId: UNKNOWN_ID, quantity: 1 }],
      })
      .expect(422);
    expect(unknown.body.details[0].field).toBe('items[0].productId');
  });

  it('generates a label with a tracking number for an order', async () => {
    const { body: p } = await t.as().post('/products', { name: 'Rug', price: 80 }).expect(201);
    const o = createOrder(t.deps, t.storeId, {
      customerEmail: 'r@x.io',
      items: [{ productId: p.id, quantity: 2 }],
    });
    const { body: label } = await t
      .as()
      .post('/shipping/labels', { orderId: o.id, carrier: 'ups', service: 'express' })
      .expect(201);
    expect(label).toMatchObject({
      orderId: o.id,
      carrier: 'ups',
      service: 'express',
      currency: 'USD',
      cost: 19,
    });
    expect(label.trackingNumber).toMatch(/^UPS[0-9A-F]{18}$/);
    const bad = await t
      .as()
      .post('/shipping/labels', { orderId: UNKNOWN_ID, carrier: 'dhl' })
      .expect(422);
    expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual(['orderId', 'carrier']);
    await t
      .as()
      .post('/shipping/labels', { orderId: o.id, carrier: 'ups', service: 'teleport' })
      .expect(422);
    await t.as().put(`/orders/${o.id}`, { status: 'cancelled' }).expect(200);
    expect(
      (await t.as().post('/shipping/labels', { orderId: o.id, carrier: 'usps' }).expect(409)).body
        .code,
    ).toBe('INVALID_TRANSITION');
    const denied = await t
      .as({ scopes: ['read_shipping'] })
      .post('/shipping/labels', { orderId: o.id, carrier: 'ups' })
      .expect(403);
    expect(denied.body.requiredScope).toBe('write_shipping');
    await t
      .as({ scopes: ['write_shipping'] })
      .get('/shipping/zones')
      .expect(403);
  });
});

describe('discounts', () => {
  it('creates, lists, updates and deletes discount codes; duplicates get 409', async () => {
    const { body: d } = await t
      .as()
      .post('/discounts', {
        code: 'summer10',
        type: 'percentage',
        value: 10,
        startsAt: '2026-06-01',
        endsAt: '2026-09-01T00:00:00Z',
      })
      .expect(201);
    expect(d).toMatchObject({
      code: 'SUMMER10',
      type: 'percentage',
      value: 10,
      active: true,
      usageCount: 0,
      usageLimit: null,
      startsAt: '2026-06-01T00:00:00.000Z',
    });
    const dup = await t
      .as()
      .post('/discounts', { code: 'Summer10', type: 'fixed_amount', value: 5 })
      .expect(409);
    expect(dup.body).toMatchObject({ code: 'CONFLICT', details: [{ field: 'code' }] });
    const { body: f } = await t
      .as()
      .post('/discounts', { code: 'FIVE', type: 'fixed_amount', value: 5.5, usageLimit: 100 })
      .expect(201);
    expect(f.value).toBe(5.5);
    await t.as().put(`/discounts/${f.id}`, { code: 'summer10' }).expect(409);
    const { body: u } = await t
      .as()
      .put(`/discounts/${f.id}`, { active: false, value: 7 })
      .expect(200);
    expect(u).toMatchObject({ code: 'FIVE', active: false, value: 7, usageLimit: 100 });
    const list = await t.as().get('/discounts?sort=code&order=asc').expect(200);
    expect(list.body.data.map((x: { code: string }) => x.code)).toEqual(['FIVE', 'SUMMER10']);
    await t.as().delete(`/discounts/${f.id}`).expect(204);
    await t.as().delete(`/discounts/${f.id}`).expect(404);
    await t.as().put(`/discounts/${UNKNOWN_ID}`, { active: true }).expect(404);
  });

  it('validates type, value and dates', async () => {
    const bad = await t.as().post('/discounts', { type: 'bogo' }).expect(422);
    expect(bad.body.details.map((x: { field: string }) => x.field).sort()).toEqual([
      'code',
      'type',
    ]);
    await t.as().post('/discounts', { code: 'P', type: 'percentage', value: 150 }).expect(422);
    await t.as().post('/discounts', { code: 'P', type: 'percentage' }).expect(422);
    await t.as().post('/discounts', { code: 'has space', type: 'free_shipping' }).expect(422);
    const dates = await t
      .as()
      .post('/discounts', {
        code: 'D',
        type: 'free_shipping',
        startsAt: '2026-02-01',
        endsAt: '2026-01-01',
      })
      .expect(422);
    expect(dates.body.details[0].field).toBe('endsAt');
    expect(
      (await t.as().post('/discounts', { code: 'SHIP', type: 'free_shipping' }).expect(201)).body
        .value,
    ).toBe(0);
    expect(
      (
        await t
          .as({ scopes: ['read_discounts'] })
          .delete(`/discounts/${UNKNOWN_ID}`)
          .expect(403)
      ).body.requiredScope,
    ).toBe('write_discounts');
  });
});

describe('content', () => {
  it('creates and lists pages and blog posts; duplicate slugs get 409', async () => {
    const { body: page } = await t
      .as()
      .post('/content/pages', { title: 'About Us', body: '<p>Hi</p>' })
      .expect(201);
    expect(page).toMatchObject({
      title: 'About Us',
      slug: 'about-us',
      body: '<p>Hi</p>',
      published: true,
    });
    expect((await t.as().post('/content/pages', { title: 'About us' }).expect(409)).body.code).toBe(
      'CONFLICT',
    );
    const { body: post } = await t
      .as()
      .post('/content/blog', { title: 'Launch!', author: 'Ana', tags: ['news'], published: true })
      .expect(201);
    expect(post).toMatchObject({ slug: 'launch', author: 'Ana', tags: ['news'], published: true });
    expect(post.publishedAt).toBe(post.createdAt);
    const { body: draft } = await t
      .as()
      .post('/content/blog', { title: 'Draft', slug: 'wip' })
      .expect(201);
    expect(draft).toMatchObject({ published: false, publishedAt: null, slug: 'wip' });
    expect((await t.as().get('/content/pages').expect(200)).body.data).toHaveLength(1);
    expect((await t.as().get('/content/blog').expect(200)).body.pagination.total).toBe(2);
    const bad = await t.as().post('/content/blog', { slug: 'Not A Slug', body: 5 }).expect(422);
    expect(bad.body.details.map((x: { field: string }) => x.field).sort()).toEqual([
      'body',
      'slug',
      'title',
    ]);
    expect(
      (
        await t
          .as({ scopes: ['write_content'] })
          .get('/content/pages')
          .expect(403)
      ).body.requiredScope,
    ).toBe('read_content');
  });
});

describe('store settings and store functions', () => {
  it('answers /stores/current and /stores/settings with read_store_settings only', async () => {
    const cur = await t.as().get('/stores/current').expect(200);
    expect(Object.keys(cur.body).sort()).toEqual(['currency', 'domain', 'id', 'language', 'name']);
    expect(cur.body).toMatchObject({
      id: t.storeId,
      name: 'Test store',
      currency: 'USD',
      language: 'en',
    });
    const settings = await t.as().get('/stores/settings').expect(200);
    expect(settings.body).toMatchObject({
      id: t.storeId,
      currencies: ['USD'],
      languages: ['en'],
      timezone: 'UTC',
    });
    const denied = await t
      .as({ scopes: ['read_products'] })
      .get('/stores/current')
      .expect(403);
    expect(denied.body.requiredScope).toBe('read_store_settings');
  });

  it('createStore, getStore and listStores', () => {
    const { storeId, name } = createStore(t.deps, {
      name: ' Shop ',
      currency: 'EUR',
      language: 'de',
    });
    expect(name).toBe('Shop');
    expect(getStore(t.deps, storeId)).toMatchObject({
      id: storeId,
      currency: 'EUR',
      language: 'de',
    });
    expect(getStore(t.deps, UNKNOWN_ID)).toBeNull();
    expect(listStores(t.deps).map((s) => s.id)).toContain(storeId);
    expect(getStore(t.deps, createStore(t.deps, { currency: 'eur' }).storeId)?.currency).toBe(
      'EUR',
    );
    for (const bad of [
      { name: ' ' },
      { currency: 'EURO' },
      { language: 'english' },
      { seed: -1 },
      { seed: 1.5 },
    ]) {
      expect(() => createStore(t.deps, bad)).toThrow(
        expect.objectContaining({ code: 'PLATFORM_INVALID_OPTIONS' }),
      );
    }
  });
});
