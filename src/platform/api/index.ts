/**
 * The local platform's resource API (mounted at `/api/v1` behind the auth
 * guard, which sets `res.locals.platformAuth`) and the store functions the
 * platform, its CLI and tests use. Every function here is synchronous.
 */
import { Router } from 'express';
import { analyticsRoutes } from './analytics.js';
import { contentRoutes, discountRoutes } from './content.js';
import { customerRoutes } from './customers.js';
import { createErrorHandler, createNotFoundHandler, type ResourceDeps } from './http.js';
import { orderRoutes } from './orders.js';
import { productRoutes } from './products.js';
import { shippingRoutes } from './shipping.js';
import { storeRoutes } from './stores.js';

export { type SeedOptions, type SeedResult, seedStore } from '../seed/index.js';
export type { ResourceDeps } from './http.js';
export { ApiError } from './http.js';
export { createOrder } from './orders.js';
export {
  type CreateStoreInput,
  createStore,
  DEFAULT_SEED_PRODUCTS,
  getStore,
  listStores,
  type StoreRecord,
} from './stores.js';

/** The `/api/v1` router: every resource group of the document, scoped to the caller's store. */
export function createResourceRouter(deps: ResourceDeps): Router {
  const router = Router();
  router.use(productRoutes(deps));
  router.use(orderRoutes(deps));
  router.use(customerRoutes(deps));
  router.use(shippingRoutes(deps));
  router.use(discountRoutes(deps));
  router.use(contentRoutes(deps));
  router.use(analyticsRoutes(deps));
  router.use(storeRoutes(deps));
  router.use(createNotFoundHandler());
  router.use(createErrorHandler());
  return router;
}
