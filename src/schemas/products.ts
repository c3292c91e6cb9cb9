/** Products, their variants and images (platform document + docs/platform-contract.md). */
import * as v from 'valibot';
import { BASE_SORTS } from './common.js';
import {
  bool,
  id,
  int,
  jsonObject,
  LONG,
  list,
  money,
  num,
  obj,
  oneOf,
  str,
  stringMap,
  strings,
  timestamp,
} from './fields.js';

export const PRODUCT_STATUSES = ['active', 'draft', 'archived'] as const;
export const WEIGHT_UNITS = ['g', 'kg', 'lb', 'oz'] as const;
export const PRODUCT_SORTS = [...BASE_SORTS, 'name', 'price'] as const;
/** The variants list defaults to `position`, `asc`. */
export const VARIANT_SORTS = [...BASE_SORTS, 'position'] as const;

export const variantInput = obj({
  title: str({ min: 1 }),
  sku: v.optional(str()),
  /** @default the product's price */
  price: v.optional(num({ min: 0, money: true })),
  compareAtPrice: v.optional(v.nullable(num({ min: 0, money: true }))),
  inventoryQuantity: v.optional(num({ integer: true })),
  /** Option name → value, e.g. `{ size: 'M' }`. */
  options: v.optional(stringMap()),
});

export const imageInput = obj({
  url: str({ max: 2048, format: 'url' }),
  alt: v.optional(str()),
  /** Zero-based; images are renumbered 0…n−1. */
  position: v.optional(num({ integer: true, min: 0 })),
});

export const productCreate = obj({
  name: str({ min: 1 }),
  /** Derived from `name` when omitted. */
  slug: v.optional(str({ format: 'slug' })),
  description: v.optional(str({ max: LONG })),
  /** @default 'draft' */
  status: v.optional(oneOf(PRODUCT_STATUSES)),
  price: v.optional(num({ min: 0, money: true })),
  compareAtPrice: v.optional(v.nullable(num({ min: 0, money: true }))),
  currency: v.optional(str({ format: 'currency' })),
  sku: v.optional(str()),
  barcode: v.optional(str()),
  weight: v.optional(num({ min: 0 })),
  /** @default 'kg' */
  weightUnit: v.optional(oneOf(WEIGHT_UNITS)),
  trackInventory: v.optional(bool()),
  inventoryQuantity: v.optional(num({ integer: true })),
  category: v.optional(str()),
  tags: v.optional(strings()),
  images: v.optional(list(imageInput)),
  metadata: v.optional(jsonObject()),
  /** Variants created with the product (at most 100). */
  variants: v.optional(list(variantInput, { maxItems: 100 })),
});

/**
 * Every field optional. `variants` are managed through the variants endpoint and stock
 * through the inventory endpoint, so an update ignores both.
 */
export const productUpdate = v.partial(v.omit(productCreate, ['variants', 'inventoryQuantity']));

export const variant = v.object({
  id: id(),
  productId: id(),
  title: v.string(),
  sku: v.string(),
  price: money(),
  compareAtPrice: v.nullable(money()),
  inventoryQuantity: int(),
  options: v.record(v.string(), v.string()),
  position: int(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

export const productImage = v.object({
  url: v.string(),
  alt: v.string(),
  position: int(),
});

export const product = v.object({
  id: id(),
  name: v.string(),
  slug: v.string(),
  description: v.string(),
  status: v.picklist(PRODUCT_STATUSES),
  price: money(),
  compareAtPrice: v.nullable(money()),
  currency: v.string(),
  sku: v.string(),
  barcode: v.string(),
  weight: v.number(),
  weightUnit: v.picklist(WEIGHT_UNITS),
  trackInventory: v.boolean(),
  /** With variants: the sum of theirs. */
  inventoryQuantity: int(),
  category: v.string(),
  tags: v.array(v.string()),
  images: v.array(productImage),
  variants: v.array(variant),
  metadata: v.record(v.string(), v.unknown()),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});
