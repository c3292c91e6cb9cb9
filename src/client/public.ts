/**
 * `store-app-kit/client`: the typed platform client on its own. Loads valibot
 * and the client only: no database driver, no Express, no local platform.
 */
export { ConfigError, ConfigErrors, StoreAppError } from '../errors/index.js';
export * from './errors.js';
export type { CallOptions, Listable, ListFn, StoreApiClient } from './index.js';
export type { ApiTier, ClientOptions, RetryOptions } from './options.js';
export {
  createStoreClient,
  type GetToken,
  type StandaloneClientOptions,
} from './standalone.js';
export type { ClientLogger, HttpMethod, QueryValue, RequestOptions } from './transport.js';
export type * from './types.js';
