/**
 * Opt-in typing of `res.locals.store` on every Express handler:
 * `import type {} from 'store-app-kit/locals'` once in the app. Only for apps
 * that mount `kit.authenticated()` in front of whole routers
 * (`router.use(kit.authenticated())`), where the type cannot follow the
 * handler; otherwise `app.get(path, kit.authenticated(), handler)` is typed
 * without it. It declares `store` present everywhere, so keep every route that
 * reads it behind the middleware.
 */
import type { AuthenticatedStore } from './authenticated/index.js';

declare global {
  namespace Express {
    interface Locals {
      /** Set by `kit.authenticated()`; present on every route behind it. */
      store: AuthenticatedStore;
    }
  }
}
