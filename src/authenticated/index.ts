/**
 * Who a request acts for: `authenticate` (app session token, the admin's launch
 * token, or the session cookie → the store context, or the answer to send instead),
 * its in-memory form for tokens verified before, the session-token swap, and the app
 * session tokens themselves. Framework-free: the shells adapt it
 * (`kit.authenticated()` on Express, `kit.authenticate(request)` on Fetch).
 */
export {
  type AuthDecision,
  type AuthenticateDeps,
  type AuthenticatedStore,
  createAuthenticate,
  createMemoryAuthenticate,
} from './authenticate.js';
export { CROSS_SITE_REQUEST, SCOPES_CHANGED, SESSION_REQUIRED } from './errors.js';
export {
  createLaunchVerifier,
  createSessionTokens,
  LAUNCH_TOKEN_INVALID,
  SESSION_LIFETIME_EXCEEDED,
  SESSION_TOKEN_EXPIRED,
  SESSION_TOKEN_INVALID,
  SessionTokenError,
} from './session-token.js';
export { createSessionTokenRoute, sessionTokenResponse } from './session-token-route.js';
