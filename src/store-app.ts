/**
 * The main entry's `storeApp()`: the kit's HTTP and storage graph (express,
 * express-session, helmet, pino, drizzle-orm, jose and the kit's modules over
 * them) is imported when an app builds its kit, not when something imports
 * the package. A webhook verifier, a script or a test that only needs
 * `verify`, an error class or the types loads none of it.
 */
import type { StoreAppOptions } from './config/index.js';
import type {
  CustomStorageStoreAppKit,
  StoreAppKit,
  StoreAppOptionsWithAdapter,
  StoreAppOptionsWithoutAdapter,
} from './kit.js';

/**
 * Builds the kit: validates options and the environment, opens the database
 * and applies migrations (unless `storage.migrate: false`). Async so every
 * configuration or database mistake fails here, at start, not on the first
 * request.
 */
export async function storeApp(
  options: StoreAppOptionsWithAdapter,
): Promise<CustomStorageStoreAppKit>;
export async function storeApp(options?: StoreAppOptionsWithoutAdapter): Promise<StoreAppKit>;
export async function storeApp(
  options: StoreAppOptions,
): Promise<StoreAppKit | CustomStorageStoreAppKit>;
export async function storeApp(
  options: StoreAppOptions = {},
): Promise<StoreAppKit | CustomStorageStoreAppKit> {
  const kit = await import('./kit.js');
  return kit.createKit(options);
}
