export {
  createTokenManager,
  REFRESH_UNAVAILABLE,
  type RefreshCall,
  type RefreshedTokens,
  RefreshUnavailableError,
  type SweepResult,
  type TokenManager,
  type TokenManagerDeps,
} from './manager.js';
export type { RefreshOptions, ResolvedRefreshOptions } from './options.js';
export { resolveRefreshOptions } from './options.js';
