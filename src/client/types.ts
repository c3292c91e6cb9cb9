/**
 * Record, input and envelope types of the platform API, inferred from the
 * resource schemas in `src/schemas/` (the same objects the local platform
 * validates with and the OpenAPI document is generated from).
 *
 * Inputs are exact: an object literal with a misspelt or unknown key is a
 * compile error. Outputs name every field the platform returns; fields a newer
 * platform adds are still present on the objects at run time (the client never
 * strips them), they are just not in the type.
 */
import type * as v from 'valibot';
import type * as analytics from '../schemas/analytics.js';
import type * as collections from '../schemas/collections.js';
import type { BASE_SORTS, pagination } from '../schemas/common.js';
import type * as content from '../schemas/content.js';
import type * as customers from '../schemas/customers.js';
import type * as discounts from '../schemas/discounts.js';
import type * as inventory from '../schemas/inventory.js';
import type * as orders from '../schemas/orders.js';
import type * as products from '../schemas/products.js';
import type * as shipping from '../schemas/shipping.js';
import type * as stores from '../schemas/stores.js';

type Out<S extends v.GenericSchema> = v.InferOutput<S>;
type In<S extends v.GenericSchema> = v.InferInput<S>;

export type Pagination = Out<typeof pagination>;

/** A list response: one page of records and where the next starts. */
export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

/** The sort fields every list accepts. */
export type BaseSort = (typeof BASE_SORTS)[number];

export interface ListParams<S extends string = BaseSort> {
  /** Records per page, 1 to 250. @default 25 (the platform's) */
  limit?: number;
  /** `pagination.nextCursor` of the previous page. */
  cursor?: string;
  /** One of this resource's sortable fields. @default 'created_at' */
  sort?: S;
  order?: 'asc' | 'desc';
}

export type ProductStatus = (typeof products.PRODUCT_STATUSES)[number];
export type WeightUnit = (typeof products.WEIGHT_UNITS)[number];
export type ProductSort = (typeof products.PRODUCT_SORTS)[number];
export type VariantSort = (typeof products.VARIANT_SORTS)[number];
export type ProductImage = Out<typeof products.productImage>;
export type Variant = Out<typeof products.variant>;
export type Product = Out<typeof products.product>;
/** `PUT /products/:id`: every field optional. */
export type ProductInput = In<typeof products.productUpdate>;
/** `POST /products`: `name` is required. */
export type ProductCreate = In<typeof products.productCreate>;
export type VariantInput = In<typeof products.variantInput>;

export type CollectionSort = (typeof collections.COLLECTION_SORTS)[number];
export type Collection = Out<typeof collections.collection>;
export type CollectionCreate = In<typeof collections.collectionCreate>;

export type OrderStatus = (typeof orders.ORDER_STATUSES)[number];
export type FulfillmentStatus = (typeof orders.FULFILLMENT_STATUSES)[number];
export type FinancialStatus = (typeof orders.FINANCIAL_STATUSES)[number];
export type PaymentMethod = (typeof orders.PAYMENT_METHODS)[number];
export type OrderSort = (typeof orders.ORDER_SORTS)[number];
export type OrderItem = Out<typeof orders.orderItem>;
export type Address = Out<typeof orders.address>;
export type AddressInput = In<typeof orders.addressInput>;
export type Order = Out<typeof orders.order>;
/** `GET /orders/:id` (and updates): the order plus its fulfillments and refunds. */
export type OrderDetail = Out<typeof orders.orderDetail>;
export type OrderListParams = ListParams<OrderSort> &
  Omit<In<typeof orders.orderListQuery>, keyof ListParams>;
export type OrderUpdate = In<typeof orders.orderUpdate>;
export type FulfillmentInput = In<typeof orders.fulfillmentInput>;
export type RefundInput = In<typeof orders.refundInput>;
/** What `orders.fulfill` returns: the fulfillment and the order's new `fulfillmentStatus`. */
export type Fulfillment = Out<typeof orders.fulfillmentResult>;
/** What `orders.refund` returns: the refund and the order's refund totals. */
export type Refund = Out<typeof orders.refundResult>;
export type DraftOrderInput = In<typeof orders.draftOrderInput>;
export type DraftOrder = Out<typeof orders.draftOrder>;

export type CustomerSort = (typeof customers.CUSTOMER_SORTS)[number];
export type Customer = Out<typeof customers.customer>;
/** Single reads, creates and updates: the customer plus order history and totals. */
export type CustomerDetail = Out<typeof customers.customerDetail>;
export type CustomerCreate = In<typeof customers.customerCreate>;
export type CustomerUpdate = In<typeof customers.customerUpdate>;
export type CustomerListParams = ListParams<CustomerSort>;

type AdjustmentBase = Omit<
  In<typeof inventory.inventoryAdjustment>,
  'set' | 'increment' | 'decrement'
>;
/** Exactly one of set, increment or decrement. */
export type InventoryAdjustment = (
  | { set: number; increment?: never; decrement?: never }
  | { increment: number; set?: never; decrement?: never }
  | { decrement: number; set?: never; increment?: never }
) &
  AdjustmentBase;
export type InventoryLevels = Out<typeof inventory.inventoryLevels>;

export type ShippingZone = Out<typeof shipping.zone>;
export type Carrier = Out<typeof shipping.carrier>;
export type ShippingLabelInput = In<typeof shipping.labelInput>;
export type ShippingLabel = Out<typeof shipping.label>;
export type ShippingRatesInput = In<typeof shipping.ratesInput>;
export type ShippingRate = Out<typeof shipping.rate>;
export type ShippingRateQuote = Out<typeof shipping.rateQuote>;

export type DiscountType = (typeof discounts.DISCOUNT_TYPES)[number];
export type DiscountSort = (typeof discounts.DISCOUNT_SORTS)[number];
export type Discount = Out<typeof discounts.discount>;
export type DiscountCreate = In<typeof discounts.discountCreate>;
export type DiscountUpdate = In<typeof discounts.discountUpdate>;

export type ContentPage = Out<typeof content.page>;
export type ContentPageCreate = In<typeof content.pageCreate>;
export type BlogPost = Out<typeof content.post>;
export type BlogPostCreate = In<typeof content.postCreate>;

export type AnalyticsRange = In<typeof analytics.analyticsRange>;
export type AnalyticsSalesParams = In<typeof analytics.salesQuery>;
export type AnalyticsTopProductsParams = In<typeof analytics.topProductsQuery>;
export type AnalyticsOverview = Out<typeof analytics.overview>;
export type AnalyticsSales = Out<typeof analytics.sales>;
export type AnalyticsTopProducts = Out<typeof analytics.topProducts>;

export type StoreInfo = Out<typeof stores.storeInfo>;
export type StoreSettings = Out<typeof stores.storeSettings>;
/** The session check: what the access token grants (`client.session()`). */
export type SessionInfo = Out<typeof stores.sessionInfo>;
