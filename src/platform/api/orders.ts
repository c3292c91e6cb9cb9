/**
 * Orders (list with filters, detail, update, fulfill, refund) and draft
 * orders. Line items are JSON on the order row, each with a line `id` that
 * fulfillments refer to; money is integer cents in the database.
 */
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import {
  draftOrderInput,
  FULFILLMENT_STATUSES,
  fulfillmentInput,
  type ORDER_SORTS,
  ORDER_STATUSES,
  orderUpdate,
  refundInput,
} from '../../schemas/orders.js';
import { TAX_RATE } from '../seed/index.js';
import {
  ApiError,
  badRequest,
  type ErrorDetail,
  fromCents,
  groupScope,
  idParam,
  invalid,
  notFound,
  type ResourceDeps,
  stmt,
  storeOf,
  toCents,
  transaction,
} from './http.js';
import { BASE_SORTS, listPage, parsePageQuery, type SortFields } from './pagination.js';
import { isDateTime, validateBody } from './validate.js';

export { FULFILLMENT_STATUSES, ORDER_STATUSES, PAYMENT_METHODS } from '../../schemas/orders.js';

/** Allowed order status moves (the contract's table). */
const TRANSITIONS: Record<string, readonly string[]> = {
  open: ['closed', 'cancelled'],
  closed: ['open'],
  cancelled: [],
};

const ORDER_SORT_COLUMNS: SortFields<(typeof ORDER_SORTS)[number]> = {
  ...BASE_SORTS,
  total: { column: 'total_cents', type: 'int' },
};

const ORDER_COLUMNS =
  'id, order_number, status, fulfillment_status, customer_id, customer_email, subtotal_cents, tax_cents, shipping_cents, total_cents, refunded_cents, currency, items, shipping_address, payment_method, notes, tags, created_at, updated_at';

export interface OrderRow {
  id: string;
  order_number: string;
  status: string;
  fulfillment_status: string;
  customer_id: string | null;
  customer_email: string;
  subtotal_cents: number;
  tax_cents: number;
  shipping_cents: number;
  total_cents: number;
  refunded_cents: number;
  currency: string;
  items: string;
  shipping_address: string;
  payment_method: string;
  notes: string;
  tags: string;
  created_at: string;
  updated_at: string;
}

export interface OrderItem {
  id: string;
  productId: string;
  variantId: string | null;
  name: string;
  quantity: number;
  price: number;
}

function financialStatus(r: OrderRow): string {
  if (r.refunded_cents === 0) return 'paid';
  return r.refunded_cents >= r.total_cents ? 'refunded' : 'partially_refunded';
}

export function toOrder(r: OrderRow) {
  return {
    id: r.id,
    orderNumber: r.order_number,
    status: r.status,
    fulfillmentStatus: r.fulfillment_status,
    financialStatus: financialStatus(r),
    customerId: r.customer_id,
    customerEmail: r.customer_email,
    subtotal: fromCents(r.subtotal_cents),
    tax: fromCents(r.tax_cents),
    shipping: fromCents(r.shipping_cents),
    total: fromCents(r.total_cents),
    totalRefunded: fromCents(r.refunded_cents),
    currency: r.currency,
    items: JSON.parse(r.items) as OrderItem[],
    shippingAddress: JSON.parse(r.shipping_address) as Record<string, string>,
    paymentMethod: r.payment_method,
    notes: r.notes,
    tags: JSON.parse(r.tags) as string[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function orderRow(deps: ResourceDeps, storeId: string, id: string): OrderRow {
  const row = stmt(deps, `SELECT ${ORDER_COLUMNS} FROM orders WHERE id = ? AND store_id = ?`).get(
    id,
    storeId,
  ) as OrderRow | undefined;
  if (!row) throw notFound('Order');
  return row;
}

interface FulfillmentRow {
  id: string;
  order_id: string;
  status: string;
  tracking_number: string;
  tracking_company: string;
  tracking_url: string;
  items: string;
  created_at: string;
  updated_at: string;
}
const toFulfillment = (r: FulfillmentRow) => ({
  id: r.id,
  orderId: r.order_id,
  status: r.status,
  trackingNumber: r.tracking_number,
  trackingCompany: r.tracking_company,
  trackingUrl: r.tracking_url,
  items: JSON.parse(r.items) as Array<{ itemId: string; quantity: number }>,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
interface RefundRow {
  id: string;
  order_id: string;
  amount_cents: number;
  reason: string;
  created_at: string;
}
const refundOf = (r: RefundRow, currency: string) => ({
  id: r.id,
  orderId: r.order_id,
  amount: fromCents(r.amount_cents),
  currency,
  reason: r.reason,
  createdAt: r.created_at,
});

/** Order detail: the order plus its fulfillments and refunds. */
export function readOrder(deps: ResourceDeps, storeId: string, id: string) {
  const row = orderRow(deps, storeId, id);
  const fulfillments = stmt(
    deps,
    'SELECT id, order_id, status, tracking_number, tracking_company, tracking_url, items, created_at, updated_at FROM fulfillments WHERE order_id = ? ORDER BY created_at, id',
  ).all(id) as FulfillmentRow[];
  const refunds = stmt(
    deps,
    'SELECT id, order_id, amount_cents, reason, created_at FROM refunds WHERE order_id = ? ORDER BY created_at, id',
  ).all(id) as RefundRow[];
  return {
    ...toOrder(row),
    fulfillments: fulfillments.map(toFulfillment),
    refunds: refunds.map((r) => refundOf(r, row.currency)),
  };
}

export interface LineInput {
  productId: string;
  variantId?: string;
  quantity: number;
  price?: number;
}

export interface OrderInput {
  customerEmail?: string;
  customerId?: string;
  items: LineInput[];
  shippingAddress?: Record<string, string>;
  shipping?: number;
  tax?: number;
  paymentMethod?: string;
  notes?: string;
  tags?: string[];
}

interface Priced {
  items: OrderItem[];
  subtotalCents: number;
  taxCents: number;
  shippingCents: number;
  totalCents: number;
  currency: string;
  customerId: string | null;
  customerEmail: string;
}

/** Resolves line items against the store's products and prices the order; 422 for bad references. */
function priceOrder(deps: ResourceDeps, storeId: string, input: OrderInput): Priced {
  const details: ErrorDetail[] = [];
  const items: OrderItem[] = [];
  input.items.forEach((line, i) => {
    const product = stmt(
      deps,
      'SELECT id, name, price_cents FROM products WHERE id = ? AND store_id = ?',
    ).get(line.productId.toLowerCase(), storeId) as
      | { id: string; name: string; price_cents: number }
      | undefined;
    if (!product) {
      details.push({ field: `items[${i}].productId`, message: 'is not a product of this store' });
      return;
    }
    let variant: { id: string; title: string; price_cents: number } | undefined;
    if (line.variantId) {
      variant = stmt(
        deps,
        'SELECT id, title, price_cents FROM variants WHERE id = ? AND product_id = ?',
      ).get(line.variantId.toLowerCase(), product.id) as typeof variant;
      if (!variant) {
        details.push({
          field: `items[${i}].variantId`,
          message: 'is not a variant of this product',
        });
        return;
      }
    } else {
      variant = stmt(
        deps,
        'SELECT id, title, price_cents FROM variants WHERE product_id = ? ORDER BY position LIMIT 1',
      ).get(product.id) as typeof variant;
    }
    const priceCents =
      line.price !== undefined
        ? toCents(line.price)
        : (variant?.price_cents ?? product.price_cents);
    items.push({
      id: randomUUID(),
      productId: product.id,
      variantId: variant?.id ?? null,
      name: variant ? `${product.name} - ${variant.title}` : product.name,
      quantity: line.quantity,
      price: fromCents(priceCents),
    });
  });
  let customerId: string | null = null;
  let customerEmail = input.customerEmail ?? '';
  if (input.customerId) {
    const c = stmt(deps, 'SELECT id, email FROM customers WHERE id = ? AND store_id = ?').get(
      input.customerId.toLowerCase(),
      storeId,
    ) as { id: string; email: string } | undefined;
    if (!c) details.push({ field: 'customerId', message: 'is not a customer of this store' });
    else {
      customerId = c.id;
      customerEmail ||= c.email;
    }
  } else if (customerEmail) {
    const c = stmt(deps, 'SELECT id FROM customers WHERE store_id = ? AND email = ?').get(
      storeId,
      customerEmail.toLowerCase(),
    ) as { id: string } | undefined;
    customerId = c?.id ?? null;
  }
  if (!customerEmail && details.every((d) => d.field !== 'customerId')) {
    details.push({ field: 'customerEmail', message: 'is required (or a customerId)' });
  }
  if (details.length > 0) throw invalid(details);
  const subtotalCents = items.reduce((s, it) => s + toCents(it.price) * it.quantity, 0);
  const taxCents =
    input.tax !== undefined ? toCents(input.tax) : Math.round(subtotalCents * TAX_RATE);
  const shippingCents =
    input.shipping !== undefined ? toCents(input.shipping) : subtotalCents >= 5000 ? 0 : 599;
  const currency = (
    stmt(deps, 'SELECT currency FROM stores WHERE id = ?').get(storeId) as { currency: string }
  ).currency;
  return {
    items,
    subtotalCents,
    taxCents,
    shippingCents,
    totalCents: subtotalCents + taxCents + shippingCents,
    currency,
    customerId,
    customerEmail: customerEmail.toLowerCase(),
  };
}

/**
 * Places an order the way a storefront checkout would (the document has no
 * order-creation endpoint). For the admin, seeds and tests. Synchronous.
 */
export function createOrder(deps: ResourceDeps, storeId: string, body: unknown) {
  const input = validateBody<OrderInput>(draftOrderInput, body);
  const now = deps.clock.now().toISOString();
  const id = randomUUID();
  transaction(deps, () => {
    const priced = priceOrder(deps, storeId, input);
    const { n } = stmt(deps, 'SELECT next_order_number AS n FROM stores WHERE id = ?').get(
      storeId,
    ) as {
      n: number;
    };
    stmt(deps, 'UPDATE stores SET next_order_number = ? WHERE id = ?').run(n + 1, storeId);
    stmt(
      deps,
      `INSERT INTO orders (${ORDER_COLUMNS}, store_id) VALUES (?, ?, 'open', 'unfulfilled', ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      `#${n}`,
      priced.customerId,
      priced.customerEmail,
      priced.subtotalCents,
      priced.taxCents,
      priced.shippingCents,
      priced.totalCents,
      priced.currency,
      JSON.stringify(priced.items),
      JSON.stringify(input.shippingAddress ?? {}),
      input.paymentMethod ?? 'card',
      input.notes ?? '',
      JSON.stringify(input.tags ?? []),
      now,
      now,
      storeId,
    );
  });
  return readOrder(deps, storeId, id);
}

function updateOrder(deps: ResourceDeps, storeId: string, id: string, body: unknown) {
  orderRow(deps, storeId, id);
  const input = validateBody<{ status?: string; notes?: string; tags?: string[] }>(
    orderUpdate,
    body,
    {
      partial: true,
    },
  );
  transaction(deps, () => {
    const row = orderRow(deps, storeId, id);
    if (input.status !== undefined && input.status !== row.status) {
      if (!TRANSITIONS[row.status]?.includes(input.status)) {
        throw new ApiError(
          409,
          'INVALID_TRANSITION',
          `An order cannot move from ${row.status} to ${input.status}`,
          [
            {
              field: 'status',
              message: `allowed from ${row.status}: ${TRANSITIONS[row.status]?.join(', ') || 'none'}`,
            },
          ],
        );
      }
    }
    stmt(
      deps,
      'UPDATE orders SET status = ?, notes = ?, tags = ?, updated_at = ? WHERE id = ?',
    ).run(
      input.status ?? row.status,
      input.notes ?? row.notes,
      input.tags ? JSON.stringify(input.tags) : row.tags,
      deps.clock.now().toISOString(),
      id,
    );
  });
  return readOrder(deps, storeId, id);
}

function fulfillOrder(deps: ResourceDeps, storeId: string, id: string, body: unknown) {
  orderRow(deps, storeId, id);
  const input = validateBody<{
    trackingNumber: string;
    trackingCompany?: string;
    trackingUrl?: string;
    items?: Array<{ itemId: string; quantity: number }>;
  }>(fulfillmentInput, body);
  const now = deps.clock.now().toISOString();
  const fulfillmentId = randomUUID();
  transaction(deps, () => {
    const row = orderRow(deps, storeId, id);
    if (row.status === 'cancelled') {
      throw new ApiError(409, 'INVALID_TRANSITION', 'A cancelled order cannot be fulfilled');
    }
    if (row.fulfillment_status === 'fulfilled') {
      throw new ApiError(409, 'INVALID_TRANSITION', 'The order is already fulfilled');
    }
    const items = JSON.parse(row.items) as OrderItem[];
    const done = new Map<string, number>();
    const previous = stmt(deps, 'SELECT items FROM fulfillments WHERE order_id = ?').all(
      id,
    ) as Array<{
      items: string;
    }>;
    for (const f of previous) {
      for (const it of JSON.parse(f.items) as Array<{ itemId: string; quantity: number }>) {
        done.set(it.itemId, (done.get(it.itemId) ?? 0) + it.quantity);
      }
    }
    const remaining = new Map(items.map((it) => [it.id, it.quantity - (done.get(it.id) ?? 0)]));
    let lines: Array<{ itemId: string; quantity: number }>;
    if (input.items) {
      const details: ErrorDetail[] = [];
      const asked = new Map<string, number>();
      input.items.forEach((line, i) => {
        const itemId = line.itemId.toLowerCase();
        const left = remaining.get(itemId);
        if (left === undefined) {
          details.push({
            field: `items[${i}].itemId`,
            message: 'is not a line item of this order',
          });
          return;
        }
        const total = (asked.get(itemId) ?? 0) + line.quantity;
        asked.set(itemId, total);
        if (total > left) {
          details.push({
            field: `items[${i}].quantity`,
            message: `at most ${left} left to fulfill`,
          });
        }
      });
      if (details.length > 0) throw invalid(details);
      lines = [...asked].map(([itemId, quantity]) => ({ itemId, quantity }));
    } else {
      lines = [...remaining]
        .filter(([, q]) => q > 0)
        .map(([itemId, quantity]) => ({ itemId, quantity }));
    }
    for (const l of lines) remaining.set(l.itemId, (remaining.get(l.itemId) ?? 0) - l.quantity);
    const allDone = [...remaining.values()].every((q) => q <= 0);
    stmt(
      deps,
      `INSERT INTO fulfillments (id, store_id, order_id, status, tracking_number, tracking_company, tracking_url, items, created_at, updated_at)
       VALUES (?, ?, ?, 'success', ?, ?, ?, ?, ?, ?)`,
    ).run(
      fulfillmentId,
      storeId,
      id,
      input.trackingNumber,
      input.trackingCompany ?? '',
      input.trackingUrl ?? '',
      JSON.stringify(lines),
      now,
      now,
    );
    stmt(deps, 'UPDATE orders SET fulfillment_status = ?, updated_at = ? WHERE id = ?').run(
      allDone ? 'fulfilled' : 'partial',
      now,
      id,
    );
  });
  const f = stmt(
    deps,
    'SELECT id, order_id, status, tracking_number, tracking_company, tracking_url, items, created_at, updated_at FROM fulfillments WHERE id = ?',
  ).get(fulfillmentId) as FulfillmentRow;
  const order = orderRow(deps, storeId, id);
  return { ...toFulfillment(f), fulfillmentStatus: order.fulfillment_status };
}

function refundOrder(deps: ResourceDeps, storeId: string, id: string, body: unknown) {
  orderRow(deps, storeId, id);
  const input = validateBody<{ amount?: number; reason?: string }>(refundInput, body);
  const now = deps.clock.now().toISOString();
  const refundId = randomUUID();
  const currency = transaction(deps, () => {
    const row = orderRow(deps, storeId, id);
    const left = row.total_cents - row.refunded_cents;
    if (left <= 0) {
      throw invalid([{ field: 'amount', message: 'the order is already fully refunded' }]);
    }
    const amount = input.amount === undefined ? left : toCents(input.amount);
    if (amount > left) {
      throw invalid([
        { field: 'amount', message: `must not exceed the remaining ${fromCents(left)}` },
      ]);
    }
    stmt(
      deps,
      'INSERT INTO refunds (id, store_id, order_id, amount_cents, reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(refundId, storeId, id, amount, input.reason ?? '', now, now);
    stmt(
      deps,
      'UPDATE orders SET refunded_cents = refunded_cents + ?, updated_at = ? WHERE id = ?',
    ).run(amount, now, id);
    return row.currency;
  });
  const r = stmt(
    deps,
    'SELECT id, order_id, amount_cents, reason, created_at FROM refunds WHERE id = ?',
  ).get(refundId) as RefundRow;
  const order = orderRow(deps, storeId, id);
  return {
    ...refundOf(r, currency),
    totalRefunded: fromCents(order.refunded_cents),
    remaining: fromCents(order.total_cents - order.refunded_cents),
    financialStatus: financialStatus(order),
  };
}

function createDraftOrder(deps: ResourceDeps, storeId: string, body: unknown) {
  const input = validateBody<OrderInput>(draftOrderInput, body);
  const id = randomUUID();
  const now = deps.clock.now().toISOString();
  const priced = priceOrder(deps, storeId, input);
  stmt(
    deps,
    `INSERT INTO draft_orders (id, store_id, status, customer_id, customer_email, subtotal_cents, tax_cents, shipping_cents, total_cents, currency, items, shipping_address, notes, tags, created_at, updated_at)
     VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    storeId,
    priced.customerId,
    priced.customerEmail,
    priced.subtotalCents,
    priced.taxCents,
    priced.shippingCents,
    priced.totalCents,
    priced.currency,
    JSON.stringify(priced.items),
    JSON.stringify(input.shippingAddress ?? {}),
    input.notes ?? '',
    JSON.stringify(input.tags ?? []),
    now,
    now,
  );
  return {
    id,
    status: 'open',
    customerId: priced.customerId,
    customerEmail: priced.customerEmail,
    subtotal: fromCents(priced.subtotalCents),
    tax: fromCents(priced.taxCents),
    shipping: fromCents(priced.shippingCents),
    total: fromCents(priced.totalCents),
    currency: priced.currency,
    items: priced.items,
    shippingAddress: input.shippingAddress ?? {},
    notes: input.notes ?? '',
    tags: input.tags ?? [],
    createdAt: now,
    updatedAt: now,
  };
}

function listFilters(query: Record<string, unknown>): { where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const one = (name: string): string | undefined => {
    const v = query[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw badRequest(name, 'must be given once');
    return v;
  };
  const status = one('status');
  if (status !== undefined) {
    if (!(ORDER_STATUSES as readonly string[]).includes(status)) {
      throw badRequest('status', `must be one of ${ORDER_STATUSES.join(', ')}`);
    }
    where.push('status = ?');
    params.push(status);
  }
  const fulfillment = one('fulfillment_status');
  if (fulfillment !== undefined) {
    if (!(FULFILLMENT_STATUSES as readonly string[]).includes(fulfillment)) {
      throw badRequest('fulfillment_status', `must be one of ${FULFILLMENT_STATUSES.join(', ')}`);
    }
    where.push('fulfillment_status = ?');
    params.push(fulfillment);
  }
  for (const [name, op] of [
    ['created_after', '>='],
    ['created_before', '<'],
  ] as const) {
    const v = one(name);
    if (v === undefined) continue;
    if (!isDateTime(v)) throw badRequest(name, 'must be an ISO 8601 date or timestamp');
    where.push(`created_at ${op} ?`);
    params.push(new Date(v).toISOString());
  }
  return { where, params };
}

export function orderRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const orders = groupScope('orders');

  router.get('/orders', orders, function listOrders(req, res) {
    const storeId = storeOf(res);
    const filters = listFilters(req.query as Record<string, unknown>);
    const page = parsePageQuery(req, ORDER_SORT_COLUMNS);
    const { rows, pagination } = listPage<OrderRow & Record<string, unknown>>(
      deps,
      { table: 'orders', columns: ORDER_COLUMNS, scopeValue: storeId, ...filters },
      page,
      ORDER_SORT_COLUMNS,
    );
    res.json({ data: rows.map(toOrder), pagination });
  });

  router.get('/orders/:id', orders, function getOrder(req, res) {
    res.json(readOrder(deps, storeOf(res), idParam(req, 'Order')));
  });

  router.put('/orders/:id', orders, function putOrder(req, res) {
    res.json(updateOrder(deps, storeOf(res), idParam(req, 'Order'), req.body));
  });

  router.post('/orders/:id/fulfill', orders, function postFulfill(req, res) {
    res.status(201).json(fulfillOrder(deps, storeOf(res), idParam(req, 'Order'), req.body));
  });

  router.post('/orders/:id/refund', orders, function postRefund(req, res) {
    res.status(201).json(refundOrder(deps, storeOf(res), idParam(req, 'Order'), req.body));
  });

  router.post('/draft-orders', orders, function postDraftOrder(req, res) {
    res.status(201).json(createDraftOrder(deps, storeOf(res), req.body));
  });

  return router;
}
