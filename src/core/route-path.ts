/**
 * The key a kit route's path is matched by (src/core/routes.ts), apart so that the
 * configuration can refuse two kit paths the rule cannot tell apart without loading
 * the route machinery.
 */

/** The matching key of a path: lower case, without one trailing slash. */
export function routeKey(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}
