/** The document's Scopes table: every scope an app may register and request. */
export const SCOPES = {
  read_products: 'products, variants, images, collections',
  write_products: 'create, update, delete products',
  read_orders: 'orders, line items, fulfillments',
  write_orders: 'update order status, add notes, create draft orders',
  read_customers: 'customer profiles, addresses, tags',
  write_customers: 'create, update customers',
  read_analytics: 'store analytics and reports',
  read_inventory: 'stock levels and locations',
  write_inventory: 'update stock levels',
  read_shipping: 'shipping zones, rates, carriers',
  write_shipping: 'create labels, update tracking',
  read_discounts: 'discount codes and promotions',
  write_discounts: 'create, update discount codes',
  read_content: 'pages, blog posts, navigation',
  write_content: 'create, update pages and content',
  manage_checkouts: 'modify checkout flow and fields',
  manage_fulfillments: 'create and update fulfillments',
  read_store_settings: 'store configuration, currencies, languages',
} as const;

export type Scope = keyof typeof SCOPES;

export const SCOPE_NAMES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}

/**
 * Splits the document's comma-separated scope list. Deliberately strict (no
 * space separator, no trimming) so a client that sends RFC 6749's
 * space-separated form is caught here rather than by the real platform.
 */
export function parseScopeList(value: string): string[] {
  return value.split(',').filter((s) => s.length > 0);
}
