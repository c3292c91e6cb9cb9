/** Stock of a product (`/products/:id/inventory`). */
import * as v from 'valibot';
import { bool, id, int, num, obj, str, timestamp } from './fields.js';

/**
 * The adjustment body: exactly one of `set`, `increment`, `decrement` (the
 * platform answers 422 otherwise); `variantId` is required when the product
 * has variants.
 */
export const inventoryAdjustment = obj({
  set: v.optional(num({ integer: true })),
  increment: v.optional(num({ integer: true, min: 0 })),
  decrement: v.optional(num({ integer: true, min: 0 })),
  variantId: v.optional(str({ format: 'uuid' })),
  /** @default false (a decrement below zero is 409 INSUFFICIENT_STOCK) */
  allowNegative: v.optional(bool()),
});

export const inventoryLevels = v.object({
  productId: id(),
  trackInventory: v.boolean(),
  inventoryQuantity: int(),
  variants: v.array(
    v.object({ variantId: id(), title: v.string(), sku: v.string(), inventoryQuantity: int() }),
  ),
  /** One default location. */
  locations: v.array(v.object({ id: v.string(), name: v.string(), available: int() })),
  updatedAt: timestamp(),
});
