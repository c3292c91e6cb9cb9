export {
  createTokenManager,
  REFRESH_CLIENT_REJECTED,
  REFRESH_UNAVAILABLE,
  type RefreshCall,
  RefreshClientRejectedError,
  type RefreshedTokens,
  RefreshUnavailableError,
  type SweepResult,
  type TokenManager,
  type TokenManagerDeps,
} from './manager.js';
export type { RefreshOptions, ResolvedRefreshOptions } from './options.js';
export { resolveRefreshOptions } from './options.js';
