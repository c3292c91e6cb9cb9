/**
 * Types shared between the platform's auth side (src/platform/auth, the guard
 * in front of /api/v1) and its resource side (src/platform/api).
 */

/** Who is calling the resource API; set on res.locals by the guard before the resource router runs. */
export interface PlatformAuth {
  appId: string;
  clientId: string;
  storeId: string;
  /** Granted scopes of the access token. */
  scopes: readonly string[];
}

declare global {
  namespace Express {
    interface Locals {
      platformAuth?: PlatformAuth;
    }
  }
}
