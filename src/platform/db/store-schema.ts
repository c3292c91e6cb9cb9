/**
 * The local platform's store-side tables: stores and every resource of the
 * resource API. Money is stored in integer cents (sums in analytics stay
 * exact); timestamps are ISO 8601 strings from `Date#toISOString()`, which sort
 * lexicographically in time order, so keyset pagination can compare them as
 * text. Arrays and free-form objects (tags, images, items, addresses) are JSON
 * text columns: one row read gives the whole resource.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

const timestamps = {
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
};

export const stores = sqliteTable('stores', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  domain: text('domain').notNull(),
  currency: text('currency').notNull(),
  language: text('language').notNull(),
  email: text('email').notNull(),
  timezone: text('timezone').notNull(),
  country: text('country').notNull(),
  /** Next order number to hand out (orders are numbered per store). */
  nextOrderNumber: integer('next_order_number').notNull().default(1001),
  ...timestamps,
});

const storeId = () =>
  text('store_id')
    .notNull()
    .references(() => stores.id, { onDelete: 'cascade' });

export const products = sqliteTable(
  'products',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description').notNull(),
    status: text('status').notNull(),
    priceCents: integer('price_cents').notNull(),
    compareAtPriceCents: integer('compare_at_price_cents'),
    currency: text('currency').notNull(),
    sku: text('sku').notNull(),
    barcode: text('barcode').notNull(),
    weight: integer('weight_milli').notNull(),
    weightUnit: text('weight_unit').notNull(),
    trackInventory: integer('track_inventory', { mode: 'boolean' }).notNull(),
    inventoryQuantity: integer('inventory_quantity').notNull(),
    category: text('category').notNull(),
    tags: text('tags').notNull(),
    images: text('images').notNull(),
    metadata: text('metadata').notNull(),
    /**
     * The product's API JSON (with its variants), rewritten after every write
     * to the product or its variants, so reads send it without assembling it.
     */
    doc: text('doc').notNull().default(''),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('products_store_slug').on(t.storeId, t.slug),
    index('products_store_created').on(t.storeId, t.createdAt, t.id),
    index('products_store_updated').on(t.storeId, t.updatedAt, t.id),
    index('products_store_name').on(t.storeId, t.name, t.id),
    index('products_store_price').on(t.storeId, t.priceCents, t.id),
  ],
);

export const variants = sqliteTable(
  'variants',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    productId: text('product_id')
      .notNull()
      .references(() => products.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    sku: text('sku').notNull(),
    priceCents: integer('price_cents').notNull(),
    compareAtPriceCents: integer('compare_at_price_cents'),
    inventoryQuantity: integer('inventory_quantity').notNull(),
    options: text('options').notNull(),
    position: integer('position').notNull(),
    ...timestamps,
  },
  (t) => [
    index('variants_product').on(t.productId, t.position),
    index('variants_store_created').on(t.storeId, t.createdAt, t.id),
  ],
);

export const collections = sqliteTable(
  'collections',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    name: text('name').notNull(),
    slug: text('slug').notNull(),
    description: text('description').notNull(),
    productIds: text('product_ids').notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('collections_store_slug').on(t.storeId, t.slug),
    index('collections_store_created').on(t.storeId, t.createdAt, t.id),
    index('collections_store_updated').on(t.storeId, t.updatedAt, t.id),
  ],
);

export const customers = sqliteTable(
  'customers',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    email: text('email').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    phone: text('phone').notNull(),
    acceptsMarketing: integer('accepts_marketing', { mode: 'boolean' }).notNull(),
    note: text('note').notNull(),
    tags: text('tags').notNull(),
    addresses: text('addresses').notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('customers_store_email').on(t.storeId, t.email),
    index('customers_store_created').on(t.storeId, t.createdAt, t.id),
    index('customers_store_updated').on(t.storeId, t.updatedAt, t.id),
  ],
);

export const orders = sqliteTable(
  'orders',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    orderNumber: text('order_number').notNull(),
    status: text('status').notNull(),
    fulfillmentStatus: text('fulfillment_status').notNull(),
    customerId: text('customer_id'),
    customerEmail: text('customer_email').notNull(),
    subtotalCents: integer('subtotal_cents').notNull(),
    taxCents: integer('tax_cents').notNull(),
    shippingCents: integer('shipping_cents').notNull(),
    totalCents: integer('total_cents').notNull(),
    refundedCents: integer('refunded_cents').notNull().default(0),
    currency: text('currency').notNull(),
    items: text('items').notNull(),
    shippingAddress: text('shipping_address').notNull(),
    paymentMethod: text('payment_method').notNull(),
    notes: text('notes').notNull(),
    tags: text('tags').notNull(),
    ...timestamps,
  },
  (t) => [
    index('orders_store_created').on(t.storeId, t.createdAt, t.id),
    index('orders_store_updated').on(t.storeId, t.updatedAt, t.id),
    index('orders_store_total').on(t.storeId, t.totalCents, t.id),
    index('orders_store_customer').on(t.storeId, t.customerId),
  ],
);

export const fulfillments = sqliteTable(
  'fulfillments',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    orderId: text('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    status: text('status').notNull(),
    trackingNumber: text('tracking_number').notNull(),
    trackingCompany: text('tracking_company').notNull(),
    trackingUrl: text('tracking_url').notNull(),
    items: text('items').notNull(),
    ...timestamps,
  },
  (t) => [index('fulfillments_order').on(t.orderId, t.createdAt)],
);

export const refunds = sqliteTable(
  'refunds',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    orderId: text('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    amountCents: integer('amount_cents').notNull(),
    reason: text('reason').notNull(),
    ...timestamps,
  },
  (t) => [index('refunds_order').on(t.orderId, t.createdAt)],
);

export const draftOrders = sqliteTable(
  'draft_orders',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    status: text('status').notNull(),
    customerId: text('customer_id'),
    customerEmail: text('customer_email').notNull(),
    subtotalCents: integer('subtotal_cents').notNull(),
    taxCents: integer('tax_cents').notNull(),
    shippingCents: integer('shipping_cents').notNull(),
    totalCents: integer('total_cents').notNull(),
    currency: text('currency').notNull(),
    items: text('items').notNull(),
    shippingAddress: text('shipping_address').notNull(),
    notes: text('notes').notNull(),
    tags: text('tags').notNull(),
    ...timestamps,
  },
  (t) => [index('draft_orders_store_created').on(t.storeId, t.createdAt, t.id)],
);

export const shippingZones = sqliteTable(
  'shipping_zones',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    name: text('name').notNull(),
    countries: text('countries').notNull(),
    rates: text('rates').notNull(),
    ...timestamps,
  },
  (t) => [index('shipping_zones_store_created').on(t.storeId, t.createdAt, t.id)],
);

export const carriers = sqliteTable(
  'carriers',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    name: text('name').notNull(),
    code: text('code').notNull(),
    services: text('services').notNull(),
    active: integer('active', { mode: 'boolean' }).notNull(),
    ...timestamps,
  },
  (t) => [index('carriers_store_created').on(t.storeId, t.createdAt, t.id)],
);

export const shippingLabels = sqliteTable(
  'shipping_labels',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    orderId: text('order_id')
      .notNull()
      .references(() => orders.id, { onDelete: 'cascade' }),
    carrier: text('carrier').notNull(),
    service: text('service').notNull(),
    trackingNumber: text('tracking_number').notNull(),
    labelUrl: text('label_url').notNull(),
    costCents: integer('cost_cents').notNull(),
    ...timestamps,
  },
  (t) => [index('shipping_labels_order').on(t.orderId)],
);

export const discounts = sqliteTable(
  'discounts',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    code: text('code').notNull(),
    type: text('type').notNull(),
    /** Percent (0–100) for `percentage`, cents for `fixed_amount`, 0 for `free_shipping`. */
    value: integer('value').notNull(),
    minSubtotalCents: integer('min_subtotal_cents').notNull(),
    usageLimit: integer('usage_limit'),
    usageCount: integer('usage_count').notNull(),
    active: integer('active', { mode: 'boolean' }).notNull(),
    startsAt: text('starts_at'),
    endsAt: text('ends_at'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('discounts_store_code').on(t.storeId, t.code),
    index('discounts_store_created').on(t.storeId, t.createdAt, t.id),
    index('discounts_store_updated').on(t.storeId, t.updatedAt, t.id),
  ],
);

export const pages = sqliteTable(
  'pages',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    title: text('title').notNull(),
    slug: text('slug').notNull(),
    body: text('body').notNull(),
    published: integer('published', { mode: 'boolean' }).notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('pages_store_slug').on(t.storeId, t.slug),
    index('pages_store_created').on(t.storeId, t.createdAt, t.id),
    index('pages_store_updated').on(t.storeId, t.updatedAt, t.id),
  ],
);

export const blogPosts = sqliteTable(
  'blog_posts',
  {
    id: text('id').primaryKey(),
    storeId: storeId(),
    title: text('title').notNull(),
    slug: text('slug').notNull(),
    body: text('body').notNull(),
    author: text('author').notNull(),
    tags: text('tags').notNull(),
    published: integer('published', { mode: 'boolean' }).notNull(),
    publishedAt: text('published_at'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('blog_posts_store_slug').on(t.storeId, t.slug),
    index('blog_posts_store_created').on(t.storeId, t.createdAt, t.id),
    index('blog_posts_store_updated').on(t.storeId, t.updatedAt, t.id),
  ],
);

/** Storefront visits per day: the denominator of the analytics conversion rate. */
export const storeVisits = sqliteTable(
  'store_visits',
  {
    storeId: storeId(),
    day: text('day').notNull(),
    sessions: integer('sessions').notNull(),
  },
  (t) => [uniqueIndex('store_visits_store_day').on(t.storeId, t.day)],
);
