/**
 * Record and envelope types of the platform API (../shared/platform-api.md and
 * docs/platform-contract.md). Every record keeps fields it does not model
 * (index signature): the platform adds fields without a version change.
 */

/** Fields the platform may add later are kept and typed `unknown`. */
export interface Passthrough {
  [field: string]: unknown;
}

export interface Pagination {
  hasMore: boolean;
  /** Opaque cursor of the next page; null on the last page. */
  nextCursor: string | null;
  total: number;
}

/** A list response: one page of records and where the next starts. */
export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

export interface ListParams {
  /** Records per page, 1 to 250. @default 25 (the platform's) */
  limit?: number;
  /** `pagination.nextCursor` of the previous page. */
  cursor?: string;
  /** Sort field: `created_at`, `updated_at`, and per resource e.g. `name`, `price`, `total`. */
  sort?: string;
  order?: 'asc' | 'desc';
}

export interface ProductImage extends Passthrough {
  url: string;
  alt?: string;
  /** Zero-based. */
  position?: number;
}

export interface Variant extends Passthrough {
  id: string;
  productId: string;
  title: string;
  sku?: string;
  price?: number;
  compareAtPrice?: number | null;
  inventoryQuantity?: number;
  options?: Record<string, string>;
  position?: number;
  createdAt: string;
  updatedAt: string;
}

export type ProductStatus = 'active' | 'draft' | 'archived';
export type WeightUnit = 'g' | 'kg' | 'lb' | 'oz';

export interface Product extends Passthrough {
  id: string;
  name: string;
  slug: string;
  description: string;
  status: ProductStatus | (string & {});
  price: number;
  compareAtPrice: number | null;
  currency: string;
  sku: string;
  barcode: string;
  weight: number;
  weightUnit: WeightUnit | (string & {});
  trackInventory: boolean;
  inventoryQuantity: number;
  category: string;
  tags: string[];
  images: ProductImage[];
  variants: Variant[];
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface ProductInput extends Passthrough {
  name?: string;
  slug?: string;
  description?: string;
  status?: ProductStatus;
  price?: number;
  compareAtPrice?: number | null;
  currency?: string;
  sku?: string;
  barcode?: string;
  weight?: number;
  weightUnit?: WeightUnit;
  trackInventory?: boolean;
  inventoryQuantity?: number;
  category?: string;
  tags?: string[];
  images?: Array<Partial<ProductImage>>;
  metadata?: Record<string, unknown>;
}

/** `name` is required on create. */
export type ProductCreate = ProductInput & { name: string };

export interface VariantInput extends Passthrough {
  title?: string;
  sku?: string;
  price?: number;
  compareAtPrice?: number | null;
  inventoryQuantity?: number;
  options?: Record<string, string>;
  position?: number;
}

export interface Collection extends Passthrough {
  id: string;
  name?: string;
}

export type OrderStatus = 'open' | 'closed' | 'cancelled';
export type FulfillmentStatus = 'unfulfilled' | 'partial' | 'fulfilled';
export type PaymentMethod = 'card' | 'paypal' | 'bank_transfer' | 'cash_on_delivery' | 'gift_card';

export interface OrderItem extends Passthrough {
  productId: string;
  variantId: string | null;
  name: string;
  quantity: number;
  price: number;
}

export interface Address extends Passthrough {
  line1: string;
  city: string;
  /** Country code. */
  country: string;
  name?: string;
  line2?: string;
  region?: string;
  postalCode?: string;
  phone?: string;
}

export interface Order extends Passthrough {
  id: string;
  orderNumber: string;
  status: OrderStatus | (string & {});
  fulfillmentStatus: FulfillmentStatus | (string & {});
  customerEmail: string;
  subtotal: number;
  tax: number;
  shipping: number;
  total: number;
  currency: string;
  items: OrderItem[];
  shippingAddress: Address;
  paymentMethod: PaymentMethod | (string & {});
  createdAt: string;
}

export interface OrderListParams extends ListParams {
  status?: OrderStatus;
  fulfillment_status?: FulfillmentStatus;
  /** ISO 8601. */
  created_after?: string;
  /** ISO 8601. */
  created_before?: string;
}

export interface OrderUpdate extends Passthrough {
  status?: OrderStatus;
  notes?: string;
  tags?: string[];
}

export interface FulfillmentInput extends Passthrough {
  trackingNumber: string;
  trackingCompany?: string;
  trackingUrl?: string;
  /** Line items (order item ids) and quantities; omit to fulfil everything left. */
  items?: Array<{ itemId: string; quantity: number }>;
}

export interface RefundInput extends Passthrough {
  /** Omit for a full refund. */
  amount?: number;
  reason?: string;
}

export interface Fulfillment extends Passthrough {
  id: string;
}
export interface Refund extends Passthrough {
  id: string;
}
export interface DraftOrder extends Passthrough {
  id: string;
}
export interface Customer extends Passthrough {
  id: string;
  email?: string;
}
export interface CustomerListParams extends ListParams {}

/** Exactly one of set, increment or decrement. */
export type InventoryAdjustment = (
  | { set: number; increment?: never; decrement?: never }
  | { increment: number; set?: never; decrement?: never }
  | { decrement: number; set?: never; increment?: never }
) & { variantId?: string; allowNegative?: boolean };

export interface InventoryLevels extends Passthrough {
  productId?: string;
}
export interface ShippingZone extends Passthrough {
  id: string;
}
export interface Carrier extends Passthrough {
  id?: string;
}
export interface ShippingLabel extends Passthrough {}
export interface ShippingRate extends Passthrough {}
export interface ShippingRateQuote extends Passthrough {
  data: ShippingRate[];
}
export interface Discount extends Passthrough {
  id: string;
  code?: string;
}
export interface ContentPage extends Passthrough {
  id: string;
}
export interface BlogPost extends Passthrough {
  id: string;
}

export interface AnalyticsRange {
  /** ISO 8601 date or timestamp. @default 30 days ago (the platform's) */
  from?: string;
  /** ISO 8601 date or timestamp. @default now (the platform's) */
  to?: string;
}
export interface AnalyticsSalesParams extends AnalyticsRange {
  granularity?: 'day' | 'week' | 'month';
}
export interface AnalyticsTopProductsParams extends AnalyticsRange {
  /** 1 to 100. @default 10 (the platform's) */
  limit?: number;
}
export interface AnalyticsOverview extends Passthrough {}
export interface AnalyticsSales extends Passthrough {}
export interface AnalyticsTopProducts extends Passthrough {}

export interface StoreInfo extends Passthrough {
  name?: string;
  domain?: string;
  currency?: string;
  language?: string;
}
export interface StoreSettings extends Passthrough {}
