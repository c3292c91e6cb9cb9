/** Shipping zones, carriers, labels and rate quotes. */
import * as v from 'valibot';
import { id, int, list, money, num, obj, str, timestamp } from './fields.js';
import { addressInput } from './orders.js';

export const zone = v.object({
  id: id(),
  name: v.string(),
  /** Country codes; `*` is the rest of the world. */
  countries: v.array(v.string()),
  rates: v.array(
    v.object({
      id: v.string(),
      name: v.string(),
      price: money(),
      minSubtotal: v.nullable(money()),
      maxSubtotal: v.nullable(money()),
      carrier: v.string(),
      service: v.string(),
      estimatedDays: int(),
      currency: v.string(),
    }),
  ),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const carrier = v.object({
  id: id(),
  name: v.string(),
  /** What `createLabel({ carrier })` takes, e.g. `ups`. */
  code: v.string(),
  services: v.array(v.string()),
  active: v.boolean(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const labelInput = obj({
  orderId: str({ format: 'uuid' }),
  /** A carrier `code`. */
  carrier: str({ min: 1 }),
  /** @default the carrier's first service */
  service: v.optional(str()),
  /** Kilograms. @default the order's weight */
  weight: v.optional(num({ min: 0, exclusiveMin: true })),
});

export const label = v.object({
  id: id(),
  orderId: id(),
  carrier: v.string(),
  service: v.string(),
  trackingNumber: v.string(),
  trackingUrl: v.string(),
  labelUrl: v.string(),
  cost: money(),
  currency: v.string(),
  createdAt: timestamp(),
});

export const ratesInput = obj({
  shippingAddress: addressInput,
  items: list(
    obj({
      productId: str({ format: 'uuid' }),
      variantId: v.optional(str({ format: 'uuid' })),
      quantity: num({ integer: true, min: 1, max: 10_000 }),
    }),
    { minItems: 1 },
  ),
});

export const rate = v.object({
  id: v.string(),
  zoneId: id(),
  zoneName: v.string(),
  name: v.string(),
  carrier: v.string(),
  service: v.string(),
  price: money(),
  currency: v.string(),
  estimatedDays: int(),
});

export const rateQuote = v.object({
  data: v.array(rate),
  subtotal: money(),
  weightKg: v.number(),
});
