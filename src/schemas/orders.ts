/** Orders, their fulfillments and refunds, and draft orders. */
import * as v from 'valibot';
import { BASE_SORTS, listQuery } from './common.js';
import { id, int, LONG, list, money, num, obj, oneOf, str, strings, timestamp } from './fields.js';

export const ORDER_STATUSES = ['open', 'closed', 'cancelled'] as const;
export const FULFILLMENT_STATUSES = ['unfulfilled', 'partial', 'fulfilled'] as const;
export const FINANCIAL_STATUSES = ['paid', 'partially_refunded', 'refunded'] as const;
export const PAYMENT_METHODS = [
  'card',
  'paypal',
  'bank_transfer',
  'cash_on_delivery',
  'gift_card',
] as const;
export const ORDER_SORTS = [...BASE_SORTS, 'total'] as const;

export const addressInput = obj({
  name: v.optional(str()),
  line1: str({ min: 1 }),
  line2: v.optional(str()),
  city: str({ min: 1 }),
  region: v.optional(str()),
  postalCode: v.optional(str()),
  /** Two-letter uppercase country code. */
  country: str({ format: 'country' }),
  phone: v.optional(str()),
});

/** An address as stored: the fields that were given (a draft order may have none). */
export const address = v.object({
  name: v.optional(v.string()),
  line1: v.optional(v.string()),
  line2: v.optional(v.string()),
  city: v.optional(v.string()),
  region: v.optional(v.string()),
  postalCode: v.optional(v.string()),
  country: v.optional(v.string()),
  phone: v.optional(v.string()),
});

export const orderListQuery = v.object({
  ...listQuery(ORDER_SORTS).entries,
  status: v.optional(v.picklist(ORDER_STATUSES)),
  fulfillment_status: v.optional(v.picklist(FULFILLMENT_STATUSES)),
  /** ISO 8601 date or timestamp. */
  created_after: v.optional(v.string()),
  /** ISO 8601 date or timestamp. */
  created_before: v.optional(v.string()),
});

export const orderItem = v.object({
  /** The line id fulfillments refer to. */
  id: id(),
  productId: id(),
  variantId: v.nullable(id()),
  name: v.string(),
  quantity: int(),
  price: money(),
});

export const order = v.object({
  id: id(),
  orderNumber: v.string(),
  status: v.picklist(ORDER_STATUSES),
  fulfillmentStatus: v.picklist(FULFILLMENT_STATUSES),
  financialStatus: v.picklist(FINANCIAL_STATUSES),
  customerId: v.nullable(id()),
  customerEmail: v.string(),
  subtotal: money(),
  tax: money(),
  shipping: money(),
  total: money(),
  totalRefunded: money(),
  currency: v.string(),
  items: v.array(orderItem),
  shippingAddress: address,
  paymentMethod: v.picklist(PAYMENT_METHODS),
  notes: v.string(),
  tags: v.array(v.string()),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const orderUpdate = obj({
  /** Moves: open → closed / cancelled, closed → open (409 INVALID_TRANSITION otherwise). */
  status: v.optional(oneOf(ORDER_STATUSES)),
  notes: v.optional(str({ max: LONG })),
  tags: v.optional(strings()),
});

export const fulfillmentInput = obj({
  trackingNumber: str({ min: 1 }),
  trackingCompany: v.optional(str()),
  trackingUrl: v.optional(str({ max: 2048, format: 'url' })),
  /** Line items (order item ids) and quantities; omit to fulfil everything left. */
  items: v.optional(
    list(obj({ itemId: str({ format: 'uuid' }), quantity: num({ integer: true, min: 1 }) }), {
      minItems: 1,
    }),
  ),
});

export const fulfillment = v.object({
  id: id(),
  orderId: id(),
  status: v.string(),
  trackingNumber: v.string(),
  trackingCompany: v.string(),
  trackingUrl: v.string(),
  items: v.array(v.object({ itemId: id(), quantity: int() })),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const refundInput = obj({
  /** Omit for a full refund of what remains. */
  amount: v.optional(num({ min: 0, exclusiveMin: true, money: true })),
  reason: v.optional(str()),
});

export const refund = v.object({
  id: id(),
  orderId: id(),
  amount: money(),
  currency: v.string(),
  reason: v.string(),
  createdAt: timestamp(),
});

/** `GET /orders/:id`: the order plus its fulfillments and refunds. */
export const orderDetail = v.object({
  ...order.entries,
  fulfillments: v.array(fulfillment),
  refunds: v.array(refund),
});

/** `POST /orders/:id/fulfill` answers the fulfillment and the order's new status. */
export const fulfillmentResult = v.object({
  ...fulfillment.entries,
  fulfillmentStatus: v.picklist(FULFILLMENT_STATUSES),
});

/** `POST /orders/:id/refund` answers the refund and the order's refund totals. */
export const refundResult = v.object({
  ...refund.entries,
  totalRefunded: money(),
  remaining: money(),
  financialStatus: v.picklist(FINANCIAL_STATUSES),
});

export const lineInput = obj({
  productId: str({ format: 'uuid' }),
  /** @default the product's first variant */
  variantId: v.optional(str({ format: 'uuid' })),
  quantity: num({ integer: true, min: 1, max: 10_000 }),
  /** @default the variant's price */
  price: v.optional(num({ min: 0, money: true })),
});

/** Draft order body (also `createOrder()` of the local platform). */
export const draftOrderInput = obj({
  customerEmail: v.optional(str({ format: 'email' })),
  customerId: v.optional(str({ format: 'uuid' })),
  items: list(lineInput, { minItems: 1 }),
  shippingAddress: v.optional(addressInput),
  /** @default 5.99 under a 50.00 subtotal, else 0 */
  shipping: v.optional(num({ min: 0, money: true })),
  /** @default 8% of the subtotal */
  tax: v.optional(num({ min: 0, money: true })),
  /** @default 'card' */
  paymentMethod: v.optional(oneOf(PAYMENT_METHODS)),
  notes: v.optional(str({ max: LONG })),
  tags: v.optional(strings()),
});

export const draftOrder = v.object({
  id: id(),
  status: v.literal('open'),
  customerId: v.nullable(id()),
  customerEmail: v.string(),
  subtotal: money(),
  tax: money(),
  shipping: money(),
  total: money(),
  currency: v.string(),
  items: v.array(orderItem),
  shippingAddress: address,
  notes: v.string(),
  tags: v.array(v.string()),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});
