/**
 * One client factory per kit: shares the per-store rate-limit gates between
 * every client of a store (routes and background jobs alike) and reuses client
 * objects, so `kit.client(storeId)` on each request allocates nothing.
 */
import { createLru } from '../cache/lru.js';
import { isStoreId, STORE_ID_RULE } from '../core/store-id.js';
import { StoreAppError } from '../errors/index.js';
import { createStoreClient, type StoreApiClient } from './index.js';
import type { ResolvedClientOptions } from './options.js';
import type { PlatformClock } from './platform-clock.js';
import { createRateLimiter, type RateLimiter } from './ratelimit.js';
import { type ClientLogger, createTransport, type TokenSource } from './transport.js';

export interface ClientFactory {
  /** The client of one store. */
  forStore(storeId: string): StoreApiClient;
  /** Drop a store's client and rate-limit state (after purge). */
  forget(storeId: string): void;
  readonly limiter: RateLimiter;
}

export function createClientFactory(deps: {
  options: ResolvedClientOptions;
  tokens: TokenSource;
  logger?: ClientLogger;
  /** The kit's platform clock: every response's `Date` feeds it. */
  platformClock?: PlatformClock | undefined;
}): ClientFactory {
  const limiter = createRateLimiter({
    maxConcurrent: deps.options.maxConcurrent,
    pacing: deps.options.pacing,
    maxGates: deps.options.cacheMaxStores,
    platformClock: deps.platformClock,
  });
  // A client holds no state of its own (the transport looks its gate up per call),
  // so dropping the least recently used one costs only its rebuild.
  const clients = createLru<string, StoreApiClient>({ max: deps.options.cacheMaxStores });
  return {
    limiter,
    forStore(storeId) {
      // Only a valid id is ever cached: a hit needs no check.
      let client = clients.get(storeId);
      if (!client) {
        if (!isStoreId(storeId)) {
          throw new StoreAppError(
            'INVALID_STORE_ID',
            `storeId is not a store id: ${STORE_ID_RULE}.`,
          );
        }
        client = createStoreClient(
          createTransport({
            storeId,
            options: deps.options,
            tokens: deps.tokens,
            limiter,
            logger: deps.logger,
          }),
        );
        clients.set(storeId, client);
      }
      return client;
    },
    forget(storeId) {
      clients.delete(storeId);
      limiter.delete(storeId);
    },
  };
}
