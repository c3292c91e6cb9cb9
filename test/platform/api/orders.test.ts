import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder } from '../../../src/platform/api/index.js';
import { createTestApi, type TestApi, UNKNOWN_ID } from './helpers.js';

let t: TestApi;
let productId: string;
let variantId: string;
let otherProductId: string;

beforeAll(async () => {
  t = createTestApi();
  const p = await t
    .as()
    .post('/products', {
      name: 'Kettle',
      price: 30,
      variants: [{ title: 'Steel' }, { title: 'Copper', price: 45 }],
    })
    .expect(201);
  productId = p.body.id;
  variantId = p.body.variants[1].id;
  otherProductId = (await t.as().post('/products', { name: 'Cup', price: 5 }).expect(201)).body.id;
});
afterAll(() => t.close());

function order(items = [{ productId: '', variantId: '', quantity: 2 }]) {
  return createOrder(t.deps, t.storeId, {
    customerEmail: 'Buyer@Example.com',
    items: items.map((i) => ({
      productId: i.productId || productId,
      ...(i.variantId === undefined ? {} : { variantId: i.variantId || variantId }),
      quantity: i.quantity,
    })),
    shippingAddress: { line1: '1 Main St', city: 'Portland', country: 'US', postalCode: '97201' },
    paymentMethod: 'paypal',
  });
}

describe('orders', () => {
  it('reads an order in the document shape with items, shipping and payment', async () => {
    const o = order();
    const { body } = await t.as().get(`/orders/${o.id}`).expect(200);
    expect(body).toMatchObject({
      id: o.id,
      orderNumber: '#1001',
      status: 'open',
      fulfillmentStatus: 'unfulfilled',
      customerEmail: 'buyer@example.com',
      subtotal: 90,
      tax: 7.2,
      shipping: 0,
      total: 97.2,
      currency: 'USD',
      shippingAddress: { line1: '1 Main St', city: 'Portland', country: 'US', postalCode: '97201' },
      paymentMethod: 'paypal',
      fulfillments: [],
      refunds: [],
    });
    expect(body.items).toEqual([
      {
        id: expect.any(String),
        productId,
        variantId,
        name: 'Kettle - Copper',
        quantity: 2,
        price: 45,
      },
    ]);
    expect(typeof body.createdAt).toBe('string');
  });

  it('filters the list by status, fulfillment status and creation date', async () => {
    const t0 = t.clock.now().toISOString();
    t.clock.advance(60);
    const a = order();
    const b = order();
    await t.as().put(`/orders/${b.id}`, { status: 'closed' }).expect(200);
    t.clock.advance(60);
    const t1 = t.clock.now().toISOString();
    const c = order();
    await t.as().post(`/orders/${c.id}/fulfill`, { trackingNumber: 'T1' }).expect(201);
    const ids = async (q: string) =>
      ((await t.as().get(`/orders?${q}`).expect(200)).body.data as Array<{ id: string }>).map(
        (o) => o.id,
      );
    expect(await ids(`status=closed&created_after=${t0}`)).toEqual([b.id]);
    const desc = await ids(`created_after=${t0}&created_before=${t1}`);
    expect(await ids(`created_after=${t0}&created_before=${t1}&order=asc`)).toEqual(
      [...desc].reverse(),
    );
    expect((await ids(`created_after=${t0}&created_before=${t1}`)).sort()).toEqual(
      [a.id, b.id].sort(),
    );
    expect(await ids(`fulfillment_status=fulfilled`)).toEqual([c.id]);
    expect(await ids(`created_after=${encodeURIComponent(t1)}`)).toEqual([c.id]);
    const sorted = (await t.as().get('/orders?sort=total&order=asc&limit=250').expect(200)).body
      .data;
    const totals = sorted.map((o: { total: number }) => o.total);
    expect(totals).toEqual([...totals].sort((x, y) => x - y));
    for (const q of [
      'status=shipped',
      'fulfillment_status=x',
      'created_after=yesterday',
      'created_before=2024-13-45',
      'sort=customer',
    ]) {
      expect((await t.as().get(`/orders?${q}`).expect(400)).body.code).toBe('BAD_REQUEST');
    }
  });

  it('updates notes, tags and status along the allowed transitions only', async () => {
    const o = order();
    const path = `/orders/${o.id}`;
    const upd = await t
      .as()
      .put(path, { notes: 'gift wrap', tags: ['vip'] })
      .expect(200);
    expect(upd.body).toMatchObject({ notes: 'gift wrap', tags: ['vip'], status: 'open' });
    await t.as().put(path, { status: 'closed' }).expect(200);
    await t.as().put(path, { status: 'open' }).expect(200);
    await t.as().put(path, { status: 'cancelled' }).expect(200);
    for (const status of ['open', 'closed']) {
      const res = await t.as().put(path, { status }).expect(409);
      expect(res.body.code).toBe('INVALID_TRANSITION');
    }
    expect((await t.as().get(path)).body.status).toBe('cancelled');
    expect((await t.as().put(path, { status: 'shipped' }).expect(422)).body.details[0].field).toBe(
      'status',
    );
    await t.as().put(`/orders/${UNKNOWN_ID}`, { notes: 'x' }).expect(404);
    await t.as().put('/orders/123', { notes: 'x' }).expect(404);
  });

  it('fulfills part of an order, then the rest, with tracking', async () => {
    const o = order([
      { productId: '', variantId: '', quantity: 3 },
      { productId: otherProductId, variantId: undefined as unknown as string, quantity: 1 },
    ]);
    const [line1, line2] = o.items;
    const path = `/orders/${o.id}/fulfill`;
    const bad = await t
      .as()
      .post(path, {
        trackingNumber: 'T',
        items: [
          { itemId: line1!.id, quantity: 4 },
          { itemId: UNKNOWN_ID, quantity: 1 },
        ],
      })
      .expect(422);
    expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual([
      'items[0].quantity',
      'items[1].itemId',
    ]);
    expect((await t.as().post(path, {}).expect(422)).body.details[0].field).toBe('trackingNumber');
    const part = await t
      .as()
      .post(path, {
        trackingNumber: '1Z999',
        trackingCompany: 'UPS',
        trackingUrl: 'https://ups.example/1Z999',
        items: [{ itemId: line1!.id, quantity: 2 }],
      })
      .expect(201);
    expect(part.body).toMatchObject({
      orderId: o.id,
      trackingNumber: '1Z999',
      trackingCompany: 'UPS',
      items: [{ itemId: line1!.id, quantity: 2 }],
      fulfillmentStatus: 'partial',
    });
    expect((await t.as().get(`/orders/${o.id}`)).body.fulfillmentStatus).toBe('partial');
    const rest = await t.as().post(path, { trackingNumber: '1Z1000' }).expect(201);
    expect(rest.body.items).toEqual([
      { itemId: line1!.id, quantity: 1 },
      { itemId: line2!.id, quantity: 1 },
    ]);
    expect(rest.body.fulfillmentStatus).toBe('fulfilled');
    const detail = (await t.as().get(`/orders/${o.id}`)).body;
    expect(detail.fulfillments).toHaveLength(2);
    expect(detail.fulfillmentStatus).toBe('fulfilled');
    expect((await t.as().post(path, { trackingNumber: 'again' }).expect(409)).body.code).toBe(
      'INVALID_TRANSITION',
    );
    const cancelled = order();
    await t.as().put(`/orders/${cancelled.id}`, { status: 'cancelled' }).expect(200);
    await t.as().post(`/orders/${cancelled.id}/fulfill`, { trackingNumber: 'x' }).expect(409);
    await t.as().post(`/orders/${UNKNOWN_ID}/fulfill`, { trackingNumber: 'x' }).expect(404);
  });

  it('refunds partially, refuses more than remains, then refunds the rest', async () => {
    const o = order(); // total 97.20
    const path = `/orders/${o.id}/refund`;
    const part = await t.as().post(path, { amount: 20.1, reason: 'damaged' }).expect(201);
    expect(part.body).toMatchObject({
      orderId: o.id,
      amount: 20.1,
      reason: 'damaged',
      currency: 'USD',
      totalRefunded: 20.1,
      remaining: 77.1,
      financialStatus: 'partially_refunded',
    });
    const over = await t.as().post(path, { amount: 77.11 }).expect(422);
    expect(over.body).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'amount' }] });
    for (const amount of [0, -5, 'ten', 1.001]) {
      await t.as().post(path, { amount }).expect(422);
    }
    const rest = await t.as().post(path, {}).expect(201);
    expect(rest.body).toMatchObject({ amount: 77.1, remaining: 0, financialStatus: 'refunded' });
    await t.as().post(path, { amount: 0.01 }).expect(422);
    const detail = (await t.as().get(`/orders/${o.id}`)).body;
    expect(detail.refunds.map((r: { amount: number }) => r.amount)).toEqual([20.1, 77.1]);
    expect(detail.totalRefunded).toBe(97.2);
  });

  it('needs read_orders to read and write_orders to change', async () => {
    const o = order();
    const r = await t
      .as({ scopes: ['write_orders'] })
      .get(`/orders/${o.id}`)
      .expect(403);
    expect(r.body.requiredScope).toBe('read_orders');
    const w = await t
      .as({ scopes: ['read_orders'] })
      .post(`/orders/${o.id}/refund`, {})
      .expect(403);
    expect(w.body.requiredScope).toBe('write_orders');
    await t
      .as({ scopes: ['read_orders'] })
      .post('/draft-orders', {})
      .expect(403);
    expect((await t.as().get(`/orders/${o.id}`)).body.refunds).toEqual([]);
  });
});

describe('draft orders', () => {
  it('creates a priced draft order from products and variants', async () => {
    const res = await t
      .as()
      .post('/draft-orders', {
        customerEmail: 'draft@example.com',
        items: [
          { productId, variantId, quantity: 1 },
          { productId: otherProductId, quantity: 2, price: 4.5 },
        ],
        shippingAddress: { line1: '9 Elm', city: 'Austin', country: 'US' },
        notes: 'call first',
      })
      .expect(201);
    expect(res.body).toMatchObject({
      status: 'open',
      customerEmail: 'draft@example.com',
      subtotal: 54,
      shipping: 0,
      tax: 4.32,
      total: 58.32,
      notes: 'call first',
    });
    expect(res.body.items.map((i: { name: string }) => i.name)).toEqual(['Kettle - Copper', 'Cup']);
  });

  it('names bad line items and missing fields', async () => {
    const res = await t
      .as()
      .post('/draft-orders', {
        items: [
          { productId: UNKNOWN_ID, quantity: 1 },
          { productId, variantId: UNKNOWN_ID, quantity: 1 },
          { productId, quantity: 0 },
        ],
        shippingAddress: { line1: 'x', country: 'usa' },
      })
      .expect(422);
    expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual(
      ['items[2].quantity', 'shippingAddress.city', 'shippingAddress.country'].sort(),
    );
    const refs = await t
      .as()
      .post('/draft-orders', {
        items: [
          { productId: UNKNOWN_ID, quantity: 1 },
          { productId, variantId: UNKNOWN_ID, quantity: 1 },
        ],
      })
      .expect(422);
    expect(refs.body.details.map((d: { field: string }) => d.field)).toEqual([
      'items[0].productId',
      'items[1].variantId',
      'customerEmail',
    ]);
    expect(
      (await t.as().post('/draft-orders', { customerEmail: 'a@b.co', items: [] }).expect(422)).body
        .details[0].field,
    ).toBe('items');
  });
});
