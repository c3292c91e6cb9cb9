/**
 * `createStoreClient()`: the typed client without the kit, for a script, a
 * queue worker or a serverless function that already holds a store's access
 * token. Same transport as `kit.client()` (pacing, retries, typed errors);
 * loads no database driver, no Express and nothing of the local platform.
 */
import { isStoreId, STORE_ID_RULE } from '../core/store-id.js';
import { ConfigError } from '../errors/index.js';
import { createStoreClient as clientOver, type StoreApiClient } from './index.js';
import { type ClientOptions, resolveClientOptions } from './options.js';
import { createRateLimiter } from './ratelimit.js';
import { type ClientLogger, createTransport, type TokenSource } from './transport.js';

/** Called for each request's token; `rejected` is set when the platform refused that token as expired. */
export type GetToken = (request: {
  storeId: string;
  /** The token the platform just rejected as expired: return a fresh one (or the same to give up). */
  rejected?: string;
  signal?: AbortSignal;
}) => string | Promise<string>;

export type StandaloneClientOptions = Omit<ClientOptions, 'baseUrl'> & {
  /** The platform's `{base_url}`, e.g. `https://api.example.com/api/v1`. */
  apiUrl: string;
  storeId: string;
  /** Warnings (deprecation notices, failed hooks); pino's Logger fits. */
  logger?: ClientLogger;
} & (
    | { /** A store's access token. */ accessToken: string; getToken?: never }
    | {
        /** Supplies the token per request (refresh it there). */ getToken: GetToken;
        accessToken?: never;
      }
  );

function tokenSource(options: { accessToken?: unknown; getToken?: unknown }): TokenSource {
  const { accessToken, getToken } = options;
  if ((accessToken === undefined) === (getToken === undefined)) {
    throw new ConfigError(
      'createStoreClient',
      'pass exactly one of accessToken (a token string) or getToken (a function returning one).',
    );
  }
  if (getToken !== undefined) {
    if (typeof getToken !== 'function') {
      throw new ConfigError('createStoreClient.getToken', 'must be a function returning a token.');
    }
    const get = getToken as GetToken;
    return {
      getAccessToken: async (storeId, signal) => get({ storeId, ...(signal ? { signal } : {}) }),
      refreshRejected: async (storeId, rejected, signal) =>
        get({ storeId, rejected, ...(signal ? { signal } : {}) }),
      // Nothing to flag without the kit's storage: the call throws TokenRevokedError.
      revoked: async () => true,
    };
  }
  if (typeof accessToken !== 'string' || accessToken.length === 0) {
    throw new ConfigError('createStoreClient.accessToken', 'must be a non-empty string.');
  }
  return {
    getAccessToken: async () => accessToken,
    refreshRejected: async () => accessToken,
    revoked: async () => true,
  };
}

/**
 * A typed client of one store from its access token (or a `getToken` callback).
 * Options are validated once: a mistake throws ConfigError naming the option.
 * @example
 * const client = createStoreClient({ apiUrl, storeId, accessToken });
 * const { data } = await client.products.list({ sort: 'price' });
 */
export function createStoreClient(options: StandaloneClientOptions): StoreApiClient {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('createStoreClient', 'pass { apiUrl, storeId, accessToken }.');
  }
  const { apiUrl, storeId, accessToken, getToken, logger, ...clientOptions } =
    options as StandaloneClientOptions & { accessToken?: unknown; getToken?: unknown };
  if (!isStoreId(storeId)) {
    throw new ConfigError('createStoreClient.storeId', `must be a store id (${STORE_ID_RULE}).`);
  }
  if (typeof apiUrl !== 'string') {
    throw new ConfigError(
      'createStoreClient.apiUrl',
      "must be the platform's API URL, e.g. https://api.example.com/api/v1.",
    );
  }
  const tokens = tokenSource({ accessToken, getToken });
  const resolved = resolveClientOptions({ ...clientOptions, baseUrl: apiUrl }, 'createStoreClient');
  const limiter = createRateLimiter({
    maxConcurrent: resolved.maxConcurrent,
    pacing: resolved.pacing,
  });
  return clientOver(
    createTransport({ storeId, options: resolved, tokens, limiter, ...(logger ? { logger } : {}) }),
  );
}
