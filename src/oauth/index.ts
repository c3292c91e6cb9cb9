export { type AuthorizeUrlInput, buildAuthorizeUrl } from './authorize-url.js';
export * from './errors.js';
export { codeChallengeS256, createCodeVerifier } from './pkce.js';
export { installationHasScopes, KNOWN_SCOPES, missingScopes, type Scope } from './scopes.js';
export { createBrowserBinding, createState, hashBinding, safeEqual } from './state.js';
export {
  DEFAULT_EXPIRES_IN_SECONDS,
  parseScopeString,
  requestToken,
  type TokenEndpointConfig,
  type TokenGrant,
  type TokenRequestOptions,
  type TokenResponse,
} from './token-endpoint.js';
