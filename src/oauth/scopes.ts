/**
 * The platform's scope names (platform document, "Scopes") and the check the
 * authenticated middleware uses to send a merchant through install again when
 * the app now needs more than was granted.
 */
export const KNOWN_SCOPES = [
  'read_products',
  'write_products',
  'read_orders',
  'write_orders',
  'read_customers',
  'write_customers',
  'read_analytics',
  'read_inventory',
  'write_inventory',
  'read_shipping',
  'write_shipping',
  'read_discounts',
  'write_discounts',
  'read_content',
  'write_content',
  'manage_checkouts',
  'manage_fulfillments',
  'read_store_settings',
] as const;

export type Scope = (typeof KNOWN_SCOPES)[number];

/** True when every required scope was granted to the installation. */
export function installationHasScopes(
  installation: { scopes: readonly string[] },
  requiredScopes: readonly string[],
): boolean {
  return missingScopes(installation, requiredScopes).length === 0;
}

/** Required scopes the installation lacks (empty when it has them all). */
export function missingScopes(
  installation: { scopes: readonly string[] },
  requiredScopes: readonly string[],
): string[] {
  const granted = new Set(installation.scopes);
  return requiredScopes.filter((s) => !granted.has(s));
}
