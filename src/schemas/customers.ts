/** Customers and their addresses. */
import * as v from 'valibot';
import { BASE_SORTS } from './common.js';
import { bool, id, int, LONG, list, money, obj, str, strings, timestamp } from './fields.js';
import { addressInput, FULFILLMENT_STATUSES, ORDER_STATUSES } from './orders.js';

export const CUSTOMER_SORTS = [...BASE_SORTS, 'email'] as const;

export const customerCreate = obj({
  /** Stored lowercase; unique per store (409 CONFLICT). */
  email: str({ format: 'email' }),
  firstName: v.optional(str()),
  lastName: v.optional(str()),
  phone: v.optional(str()),
  acceptsMarketing: v.optional(bool()),
  note: v.optional(str({ max: LONG })),
  tags: v.optional(strings()),
  /** At most 50; exactly one is the default (the first unless one says so). */
  addresses: v.optional(
    list(obj({ ...addressInput.entries, default: v.optional(bool()) }), { maxItems: 50 }),
  ),
});

export const customerUpdate = v.partial(customerCreate);

export const customerAddress = v.object({
  id: id(),
  name: v.optional(v.string()),
  line1: v.string(),
  line2: v.optional(v.string()),
  city: v.string(),
  region: v.optional(v.string()),
  postalCode: v.optional(v.string()),
  country: v.string(),
  phone: v.optional(v.string()),
  default: v.boolean(),
});

export const customer = v.object({
  id: id(),
  email: v.string(),
  firstName: v.string(),
  lastName: v.string(),
  phone: v.string(),
  acceptsMarketing: v.boolean(),
  note: v.string(),
  tags: v.array(v.string()),
  addresses: v.array(customerAddress),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

/** Single reads, creates and updates add the order history (newest 250) and totals. */
export const customerDetail = v.object({
  ...customer.entries,
  ordersCount: int(),
  totalSpent: money(),
  orders: v.array(
    v.object({
      id: id(),
      orderNumber: v.string(),
      status: v.picklist(ORDER_STATUSES),
      fulfillmentStatus: v.picklist(FULFILLMENT_STATUSES),
      total: money(),
      currency: v.string(),
      createdAt: timestamp(),
    }),
  ),
});
