import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder } from '../../../src/platform/api/index.js';
import { createTestApi, type TestApi } from './helpers.js';

let t: TestApi;
let mug: string;
let lamp: string;
const days: string[] = [];
let from: string;

beforeAll(async () => {
  t = createTestApi();
  mug = (await t.as().post('/products', { name: 'Mug', price: 10 }).expect(201)).body.id;
  lamp = (await t.as().post('/products', { name: 'Lamp', price: 60 }).expect(201)).body.id;
  from = t.clock.now().toISOString();
  const place = (items: Array<[string, number]>) =>
    createOrder(t.deps, t.storeId, {
      customerEmail: 'a@b.co',
      items: items.map(([productId, quantity]) => ({ productId, quantity })),
    });
  // Day 0: mug×2 (20 + 1.60 tax + 5.99 shipping = 27.59) and lamp×1 (60 + 4.80 + 0 = 64.80).
  days.push(t.clock.now().toISOString().slice(0, 10));
  place([[mug, 2]]);
  const refunded = place([[lamp, 1]]);
  await t.as().post(`/orders/${refunded.id}/refund`, { amount: 10 }).expect(201);
  // Day 1: mug×5 (50 + 4 + 0 = 54); a cancelled lamp order that must not count.
  t.clock.advance(86_400);
  days.push(t.clock.now().toISOString().slice(0, 10));
  place([[mug, 5]]);
  const cancelled = place([[lamp, 3]]);
  await t.as().put(`/orders/${cancelled.id}`, { status: 'cancelled' }).expect(200);
  t.clock.advance(60);
});
afterAll(() => t.close());

const range = () =>
  `from=${encodeURIComponent(from)}&to=${encodeURIComponent(t.clock.now().toISOString())}`;

describe('analytics from real orders', () => {
  it('overview sums sales, orders, average order value and refunds', async () => {
    const { body } = await t.as().get(`/analytics/overview?${range()}`).expect(200);
    expect(body).toMatchObject({
      currency: 'USD',
      orders: 3,
      totalSales: 146.39,
      averageOrderValue: 48.8,
      refunds: 10,
      netSales: 136.39,
      sessions: 0,
      conversionRate: 0,
    });
  });

  it('computes the conversion rate from storefront sessions', async () => {
    t.database.sqlite
      .prepare('INSERT INTO store_visits (store_id, day, sessions) VALUES (?, ?, 40), (?, ?, 20)')
      .run(t.storeId, days[0], t.storeId, days[1]);
    const { body } = await t.as().get(`/analytics/overview?${range()}`).expect(200);
    expect(body.sessions).toBe(60);
    expect(body.conversionRate).toBe(0.05);
  });

  it('sales by day fills every period and matches the orders', async () => {
    const { body } = await t.as().get(`/analytics/sales?${range()}&granularity=day`).expect(200);
    expect(body.granularity).toBe('day');
    expect(body.data).toEqual([
      { period: days[0], orders: 2, sales: 92.39, refunds: 10, netSales: 82.39 },
      { period: days[1], orders: 1, sales: 54, refunds: 0, netSales: 54 },
    ]);
    expect(body.totals).toEqual({ orders: 3, sales: 146.39 });
    const month = await t.as().get(`/analytics/sales?${range()}&granularity=month`).expect(200);
    expect(month.body.data.reduce((s: number, d: { orders: number }) => s + d.orders, 0)).toBe(3);
    expect(month.body.data[0].period).toMatch(/^\d{4}-\d{2}$/);
    const week = await t.as().get(`/analytics/sales?${range()}&granularity=week`).expect(200);
    const weekSales = week.body.data.reduce((s: number, d: { sales: number }) => s + d.sales, 0);
    expect(Math.round(weekSales * 100)).toBe(14639);
    for (const p of week.body.data) expect(new Date(`${p.period}T00:00:00Z`).getUTCDay()).toBe(1);
  });

  it('top products rank by quantity sold, ignoring cancelled orders', async () => {
    const { body } = await t.as().get(`/analytics/top-products?${range()}`).expect(200);
    expect(body.data).toEqual([
      { productId: mug, name: 'Mug', quantity: 7, revenue: 70, orders: 2 },
      { productId: lamp, name: 'Lamp', quantity: 1, revenue: 60, orders: 1 },
    ]);
    const one = await t.as().get(`/analytics/top-products?${range()}&limit=1`).expect(200);
    expect(one.body.data).toHaveLength(1);
  });

  it('defaults to the last 30 days and rejects bad parameters with 400', async () => {
    const { body } = await t.as().get('/analytics/overview').expect(200);
    expect(body.orders).toBe(3);
    const before = await t.as().get('/analytics/overview?to=2000-01-01').expect(200);
    expect(before.body.orders).toBe(0);
    for (const q of [
      'from=yesterday',
      'to=2026-02-30T99:00:00Z',
      `from=${encodeURIComponent(t.clock.now().toISOString())}&to=2000-01-01`,
      'granularity=hour',
      'limit=0',
      'limit=101',
      'from=1990-01-01',
    ]) {
      const path = q.startsWith('granularity')
        ? '/analytics/sales'
        : q.startsWith('limit')
          ? '/analytics/top-products'
          : '/analytics/overview';
      const res = await t.as().get(`${path}?${q}`).expect(400);
      expect(res.body.code).toBe('BAD_REQUEST');
    }
  });

  it('needs read_analytics', async () => {
    const res = await t
      .as({ scopes: ['read_orders'] })
      .get('/analytics/overview')
      .expect(403);
    expect(res.body.requiredScope).toBe('read_analytics');
  });
});
