/** The public types of the Express shell (re-exported by the package entry). */
import type { RequestHandler } from 'express';
import type { AuthenticatedStore } from '../../authenticated/index.js';

/** What `kit.authenticated()` guarantees on `res.locals` for the handlers after it. */
export interface AuthenticatedLocals extends Record<string, unknown> {
  store: AuthenticatedStore;
}

/**
 * `kit.authenticated()`: an Express handler whose `res.locals` type carries
 * `store`, so `app.get(path, kit.authenticated(), (req, res) => res.locals.store)`
 * is typed. For `router.use(kit.authenticated())`, opt into the global
 * declaration with `import type {} from 'store-app-kit/locals'`.
 */
export type AuthenticatedHandler = RequestHandler<
  Record<string, string>,
  unknown,
  unknown,
  Record<string, unknown>,
  AuthenticatedLocals
>;

/**
 * `kit.middleware()`: one Express middleware (the kit's routes, its request log and
 * launch watch). A function, not a Router, since issue 31: mount it with `app.use()`.
 */
export type KitMiddleware = RequestHandler;
