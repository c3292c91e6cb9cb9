/**
 * The auth side's view of stores, over the resource side's functions
 * (src/platform/api), so admin, consent and approveInstall share one source.
 */
import { createStore, getStore, listStores } from './api/index.js';
import type { Clock } from './clock.js';
import type { PlatformDb } from './db/index.js';

export interface StoreSummary {
  id: string;
  name: string;
  domain: string;
  currency: string;
}

export interface StoreDirectory {
  create(input: { name?: string; currency?: string; seed?: boolean | number }): {
    storeId: string;
    name: string;
  };
  list(): StoreSummary[];
  get(storeId: string): StoreSummary | null;
  exists(storeId: string): boolean;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createStoreDirectory(deps: { db: PlatformDb; clock: Clock }): StoreDirectory {
  const get = (storeId: string): StoreSummary | null => {
    if (!UUID_RE.test(storeId)) return null;
    const s = getStore(deps, storeId);
    return s ? { id: s.id, name: s.name, domain: s.domain, currency: s.currency } : null;
  };
  return {
    create: (input) => createStore(deps, input),
    list: () => listStores(deps),
    get,
    exists: (storeId) => get(storeId) !== null,
  };
}
