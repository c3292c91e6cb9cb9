/** Discount codes. */
import * as v from 'valibot';
import { BASE_SORTS } from './common.js';
import { bool, id, int, money, num, obj, oneOf, str, timestamp } from './fields.js';

export const DISCOUNT_TYPES = ['percentage', 'fixed_amount', 'free_shipping'] as const;
export const DISCOUNT_SORTS = [...BASE_SORTS, 'code'] as const;

export const discountCreate = obj({
  /** Stored uppercase; unique per store, case-insensitively (409 CONFLICT). */
  code: str({ min: 1 }),
  type: oneOf(DISCOUNT_TYPES),
  /** Percent for `percentage`, an amount for `fixed_amount`. */
  value: v.optional(num({ min: 0, money: true })),
  minSubtotal: v.optional(num({ min: 0, money: true })),
  usageLimit: v.optional(v.nullable(num({ integer: true, min: 1 }))),
  active: v.optional(bool()),
  startsAt: v.optional(v.nullable(str({ format: 'datetime' }))),
  endsAt: v.optional(v.nullable(str({ format: 'datetime' }))),
});

export const discountUpdate = v.partial(discountCreate);

export const discount = v.object({
  id: id(),
  code: v.string(),
  type: v.picklist(DISCOUNT_TYPES),
  value: v.number(),
  minSubtotal: money(),
  usageLimit: v.nullable(int()),
  usageCount: int(),
  active: v.boolean(),
  startsAt: v.nullable(v.string()),
  endsAt: v.nullable(v.string()),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});
