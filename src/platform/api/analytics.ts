/**
 * Analytics computed with SQL from the store's own orders (cancelled orders
 * excluded) and daily storefront visits. Nothing is canned: create an order
 * and the figures move.
 */
import { type Request, Router } from 'express';
import { badRequest, fromCents, groupScope, type ResourceDeps, stmt, storeOf } from './http.js';
import { isDateTime } from './validate.js';

const DAY_MS = 86_400_000;
const MAX_RANGE_DAYS = 3660;
export const GRANULARITIES = ['day', 'week', 'month'] as const;
type Granularity = (typeof GRANULARITIES)[number];

function param(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw badRequest(name, 'must be given once');
  return v;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** `from` inclusive, `to` exclusive; a date-only `to` covers that whole day. Default: the last 30 days. */
function range(deps: ResourceDeps, req: Request): { from: Date; to: Date } {
  const rawFrom = param(req, 'from');
  const rawTo = param(req, 'to');
  for (const [name, v] of [
    ['from', rawFrom],
    ['to', rawTo],
  ] as const) {
    if (v !== undefined && !isDateTime(v))
      throw badRequest(name, 'must be an ISO 8601 date or timestamp');
  }
  const to =
    rawTo === undefined
      ? deps.clock.now()
      : new Date(Date.parse(rawTo) + (DATE_ONLY.test(rawTo) ? DAY_MS : 0));
  const from = rawFrom === undefined ? new Date(to.getTime() - 30 * DAY_MS) : new Date(rawFrom);
  if (from.getTime() >= to.getTime()) throw badRequest('from', 'must be before to');
  if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) {
    throw badRequest('from', `the range must be at most ${MAX_RANGE_DAYS} days`);
  }
  return { from, to };
}

const BUCKET_SQL: Record<Granularity, string> = {
  day: "strftime('%Y-%m-%d', created_at)",
  week: "date(created_at, 'weekday 0', '-6 days')",
  month: "strftime('%Y-%m', created_at)",
};

/** Period labels between from and to, so periods without orders show as zero. */
function periods(from: Date, to: Date, granularity: Granularity): string[] {
  const out: string[] = [];
  const d = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()));
  if (granularity === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  if (granularity === 'month') d.setUTCDate(1);
  while (d.getTime() < to.getTime()) {
    const iso = d.toISOString();
    out.push(granularity === 'month' ? iso.slice(0, 7) : iso.slice(0, 10));
    if (granularity === 'day') d.setUTCDate(d.getUTCDate() + 1);
    else if (granularity === 'week') d.setUTCDate(d.getUTCDate() + 7);
    else d.setUTCMonth(d.getUTCMonth() + 1);
  }
  return out;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

export function analyticsRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const analytics = groupScope('analytics', true);
  const currencyOf = (storeId: string) =>
    (
      stmt(deps, 'SELECT currency FROM stores WHERE id = ?').get(storeId) as
        | { currency: string }
        | undefined
    )?.currency ?? 'USD';

  router.get('/analytics/overview', analytics, function overview(req, res) {
    const storeId = storeOf(res);
    const { from, to } = range(deps, req);
    const f = from.toISOString();
    const t = to.toISOString();
    const s = stmt(
      deps,
      `SELECT count(*) AS orders, coalesce(sum(total_cents), 0) AS sales, coalesce(sum(refunded_cents), 0) AS refunds,
              coalesce(sum(tax_cents), 0) AS tax, coalesce(sum(shipping_cents), 0) AS shipping,
              count(DISTINCT coalesce(customer_id, customer_email)) AS customers
       FROM orders WHERE store_id = ? AND status != 'cancelled' AND created_at >= ? AND created_at < ?`,
    ).get(storeId, f, t) as {
      orders: number;
      sales: number;
      refunds: number;
      tax: number;
      shipping: number;
      customers: number;
    };
    const { sessions } = stmt(
      deps,
      'SELECT coalesce(sum(sessions), 0) AS sessions FROM store_visits WHERE store_id = ? AND day >= ? AND day <= ?',
    ).get(storeId, f.slice(0, 10), new Date(to.getTime() - 1).toISOString().slice(0, 10)) as {
      sessions: number;
    };
    res.json({
      from: f,
      to: t,
      currency: currencyOf(storeId),
      totalSales: fromCents(s.sales),
      orders: s.orders,
      averageOrderValue: s.orders === 0 ? 0 : round(s.sales / s.orders / 100, 2),
      refunds: fromCents(s.refunds),
      netSales: fromCents(s.sales - s.refunds),
      tax: fromCents(s.tax),
      shipping: fromCents(s.shipping),
      customers: s.customers,
      sessions,
      conversionRate: sessions === 0 ? 0 : round(s.orders / sessions, 4),
    });
  });

  router.get('/analytics/sales', analytics, function sales(req, res) {
    const storeId = storeOf(res);
    const { from, to } = range(deps, req);
    const granularity = (param(req, 'granularity') ?? 'day') as Granularity;
    if (!GRANULARITIES.includes(granularity)) {
      throw badRequest('granularity', `must be one of ${GRANULARITIES.join(', ')}`);
    }
    const rows = stmt(
      deps,
      `SELECT ${BUCKET_SQL[granularity]} AS period, count(*) AS orders, sum(total_cents) AS sales, sum(refunded_cents) AS refunds
       FROM orders WHERE store_id = ? AND status != 'cancelled' AND created_at >= ? AND created_at < ?
       GROUP BY period ORDER BY period`,
    ).all(storeId, from.toISOString(), to.toISOString()) as Array<{
      period: string;
      orders: number;
      sales: number;
      refunds: number;
    }>;
    const byPeriod = new Map(rows.map((r) => [r.period, r]));
    const data = periods(from, to, granularity).map((period) => {
      const r = byPeriod.get(period);
      return {
        period,
        orders: r?.orders ?? 0,
        sales: fromCents(r?.sales ?? 0),
        refunds: fromCents(r?.refunds ?? 0),
        netSales: fromCents((r?.sales ?? 0) - (r?.refunds ?? 0)),
      };
    });
    res.json({
      from: from.toISOString(),
      to: to.toISOString(),
      granularity,
      currency: currencyOf(storeId),
      totals: {
        orders: data.reduce((s, d) => s + d.orders, 0),
        sales: fromCents(rows.reduce((s, r) => s + r.sales, 0)),
      },
      data,
    });
  });

  router.get('/analytics/top-products', analytics, function topProducts(req, res) {
    const storeId = storeOf(res);
    const { from, to } = range(deps, req);
    const rawLimit = param(req, 'limit');
    const limit = rawLimit === undefined ? 10 : Number(rawLimit);
    if (!/^\d{1,3}$/.test(rawLimit ?? '10') || limit < 1 || limit > 100) {
      throw badRequest('limit', 'must be an integer from 1 to 100');
    }
    const rows = stmt(
      deps,
      `SELECT json_extract(li.value, '$.productId') AS productId,
              max(json_extract(li.value, '$.name')) AS itemName,
              sum(json_extract(li.value, '$.quantity')) AS quantity,
              sum(CAST(round(json_extract(li.value, '$.price') * 100) AS INTEGER) * json_extract(li.value, '$.quantity')) AS revenue,
              count(DISTINCT o.id) AS orders
       FROM orders o, json_each(o.items) li
       WHERE o.store_id = ? AND o.status != 'cancelled' AND o.created_at >= ? AND o.created_at < ?
       GROUP BY productId ORDER BY quantity DESC, revenue DESC, productId LIMIT ?`,
    ).all(storeId, from.toISOString(), to.toISOString(), limit) as Array<{
      productId: string;
      itemName: string;
      quantity: number;
      revenue: number;
      orders: number;
    }>;
    const names = new Map(
      (
        stmt(
          deps,
          'SELECT id, name FROM products WHERE store_id = ? AND id IN (SELECT value FROM json_each(?))',
        ).all(storeId, JSON.stringify(rows.map((r) => r.productId))) as Array<{
          id: string;
          name: string;
        }>
      ).map((p) => [p.id, p.name]),
    );
    res.json({
      from: from.toISOString(),
      to: to.toISOString(),
      currency: currencyOf(storeId),
      data: rows.map((r) => ({
        productId: r.productId,
        name: names.get(r.productId) ?? r.itemName,
        quantity: r.quantity,
        revenue: fromCents(r.revenue),
        orders: r.orders,
      })),
    });
  });

  return router;
}
