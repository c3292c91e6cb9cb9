/** Analytics over the store's orders (cancelled ones excluded). */
import * as v from 'valibot';
import { int, money } from './fields.js';

export const GRANULARITIES = ['day', 'week', 'month'] as const;

export const analyticsRange = v.object({
  /** ISO 8601 date or timestamp. @default 30 days ago */
  from: v.optional(v.string()),
  /** ISO 8601 date or timestamp (a date includes that whole day). @default now */
  to: v.optional(v.string()),
});

export const salesQuery = v.object({
  ...analyticsRange.entries,
  /** @default 'day' */
  granularity: v.optional(v.picklist(GRANULARITIES)),
});

export const topProductsQuery = v.object({
  ...analyticsRange.entries,
  /** 1 to 100. @default 10 */
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100))),
});

const span = { from: v.string(), to: v.string(), currency: v.string() };

export const overview = v.object({
  ...span,
  totalSales: money(),
  orders: int(),
  averageOrderValue: money(),
  refunds: money(),
  netSales: money(),
  tax: money(),
  shipping: money(),
  customers: int(),
  /** Storefront sessions of the period (0 when none). */
  sessions: int(),
  /** orders ÷ sessions. */
  conversionRate: v.number(),
});

export const sales = v.object({
  ...span,
  granularity: v.picklist(GRANULARITIES),
  totals: v.object({ orders: int(), sales: money() }),
  /** One entry per period (days `YYYY-MM-DD`, weeks by their Monday, months `YYYY-MM`). */
  data: v.array(
    v.object({
      period: v.string(),
      orders: int(),
      sales: money(),
      refunds: money(),
      netSales: money(),
    }),
  ),
});

export const topProducts = v.object({
  ...span,
  /** By quantity sold, then revenue. */
  data: v.array(
    v.object({
      productId: v.string(),
      name: v.string(),
      quantity: int(),
      revenue: money(),
      orders: int(),
    }),
  ),
});
