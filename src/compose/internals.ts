/**
 * The kit's internals for the kit's own tests, benchmarks and entries: the sealed
 * storage and the resolved configuration (which holds secrets), and the Fetch shell
 * the Hono mount (`store-app-kit/hono`) is built over. Not on the kit object, not a
 * package entry: an app reaches none of them.
 */
import type { ResolvedConfig } from '../config/index.js';
import type { FetchShell } from '../shells/fetch/index.js';
import type { Storage } from '../storage/types.js';

export interface KitInternals {
  storage: Storage;
  config: ResolvedConfig;
  /** The kit's Fetch shell (built on first use, the one `kit.fetch` uses). */
  fetchShell(): FetchShell;
}

const internals = new WeakMap<object, KitInternals>();

/** Records `kit`'s internals (the kit does it when it is built). */
export function registerInternals(kit: object, value: KitInternals): void {
  internals.set(kit, value);
}

/** Whether `kit` is a kit built by `storeApp()` (the object itself, not a copy). */
export function isKit(kit: unknown): boolean {
  return typeof kit === 'object' && kit !== null && internals.has(kit);
}

/** The internals of a kit built by `storeApp()`. */
export function internalsOf(kit: object): KitInternals {
  const found = internals.get(kit);
  if (!found) throw new Error('Not a kit built by storeApp().');
  return found;
}
