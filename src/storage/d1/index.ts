/**
 * `store-app-kit/storage/d1`: the kit's storage on Cloudflare D1 (Drizzle's
 * D1 driver), for `storeApp({ storage: { adapter: d1Adapter(env.DB) } })`.
 * An entry of its own, so no other entry loads Drizzle's D1 driver, and free
 * of Node modules, so a Worker can import it. See docs/storage.md
 * ("Cloudflare D1").
 */
export {
  D1_LOCK_MS,
  type D1AdapterOptions,
  type D1DatabaseBinding,
  type D1Drizzle,
  type D1Transaction,
  type D1Write,
  d1Adapter,
} from './adapter.js';
export { D1_MIGRATIONS } from './migrations.js';
