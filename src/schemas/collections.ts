/** Collections: named groups of a store's products. */
import * as v from 'valibot';
import { BASE_SORTS } from './common.js';
import { id, int, LONG, obj, str, strings, timestamp } from './fields.js';

export const COLLECTION_SORTS = [...BASE_SORTS, 'name'] as const;

export const collectionCreate = obj({
  name: str({ min: 1 }),
  /** Derived from `name` when omitted. */
  slug: v.optional(str({ format: 'slug' })),
  description: v.optional(str({ max: LONG })),
  /** Products of the store (422 otherwise). */
  productIds: v.optional(strings()),
});

export const collection = v.object({
  id: id(),
  name: v.string(),
  slug: v.string(),
  description: v.string(),
  productIds: v.array(v.string()),
  productsCount: int(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});
