/**
 * `kit.authenticated()`: finds the store of a request (app session token,
 * admin launch token, or the session cookie), checks the installation (from
 * the token manager's memory while the token is valid: no platform call, no
 * database read), and sets `res.locals.store = { storeId, scopes, client }`.
 *
 * When the app cannot act for the store (not installed, uninstalled, refresh
 * refused, scopes grown), a page navigation is sent through the install and a
 * fetch/XHR call gets 401 JSON plus a header naming where to re-authorise.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { pino } from 'pino';
import type { ClientFactory } from '../client/factory.js';
import type { StoreApiClient } from '../client/index.js';
import { type AuthDecision, createAuthenticate } from '../core/authenticate.js';
import { BEARER_TOKEN } from '../core/bearer.js';
import { sessionTokenResponse } from '../core/session-token-route.js';
import { existingAncestors } from '../install/pages.js';
import type { TokenManager } from '../refresh/manager.js';
import { sendCoreResponse, sessionOf, toCoreRequest } from '../shells/express/adapter.js';
import type { LaunchWatch } from './launch-watch.js';
import type { ResolvedAuthenticatedOptions } from './options.js';
import type { LaunchVerifier, SessionTokenIssuer } from './session-token.js';

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

/** What `authenticated()` puts on `res.locals.store`. */
export interface AuthenticatedStore {
  storeId: string;
  /** Scopes the merchant granted. */
  scopes: readonly string[];
  /**
   * Configured scopes the merchant did not grant. Empty unless
   * `auth.narrowerScopes` is 'record' (with 'refuse' such a store is sent
   * through the install instead).
   */
  missingScopes: readonly string[];
  /** The API client for this store (refreshes itself, paced, typed errors). */
  client: StoreApiClient;
  /** Mint an app session token for the embedded frontend (`Authorization: Bearer`). */
  sessionToken(): Promise<{ token: string; expiresAt: Date }>;
}

export interface AuthenticatedDeps {
  tokens: Pick<TokenManager, 'getInstallation' | 'reload'> &
    Partial<Pick<TokenManager, 'cachedInstallation'>>;
  clients: Pick<ClientFactory, 'forStore'>;
  /** Scopes the app is configured to need; a grant lacking one sends the merchant through /auth. */
  scopes: readonly string[];
  /**
   * 'record': a grant lacking some of `scopes` is served (the route sees
   * `missingScopes`) instead of sent through /auth again.
   * @default 'refuse'
   */
  narrowerScopes?: 'refuse' | 'record';
  sessionTokens: SessionTokenIssuer;
  /** Absent when the app is not embedded. */
  launch?: { param: string; verifier: LaunchVerifier };
  /** Explains a 401 without a session when the admin's launch never reached us. */
  launchWatch?: Pick<LaunchWatch, 'markHandled' | 'explainCall'>;
  /** Binds the browser session to a store (regenerating its id). */
  startSession?: (req: Request, storeId: string) => Promise<void>;
  /** Absolute URL of the install begin route (`{appUrl}/auth`). */
  beginUrl: string;
  /**
   * Absolute lifetime of a merchant session (cookie, and the tokens renewed
   * from it), in seconds; past it the merchant launches the app again.
   * @default 86400
   */
  maxSessionAgeSeconds?: number;
  options: ResolvedAuthenticatedOptions;
  logger?: { warn(obj: Record<string, unknown>, msg: string): void };
}

/** The token of an `Authorization: Bearer <token>` header (the same rule the core applies). */
/** `missingScopes` of a store that granted every scope: one frozen array for all requests. */
const NONE_MISSING: readonly string[] = Object.freeze([]);
/** The core reads no request logger here: it warns through `deps.logger`. */
const SILENT = pino({ enabled: false });

export function createAuthenticated(deps: AuthenticatedDeps) {
  const required = [...deps.scopes];
  const hasRequired = (granted: readonly string[]) => required.every((s) => granted.includes(s));
  const authenticate = createAuthenticate({
    sessionTokens: deps.sessionTokens,
    tokens: deps.tokens,
    client: (storeId) => deps.clients.forStore(storeId),
    scopes: required,
    narrowerScopes: deps.narrowerScopes,
    launch: deps.launch,
    launchWatch: deps.launchWatch,
    beginUrl: deps.beginUrl,
    reauthorizeHeader: deps.options.reauthorizeHeader,
    maxSessionAgeSeconds: deps.maxSessionAgeSeconds,
    logger: deps.logger,
  });
  const startSession = deps.startSession;

  /**
   * A bearer token this process verified before (still before its expiry and
   * its session's end) for a store whose installation is in memory, fresh and
   * has every required scope: `res.locals.store` is set without a promise.
   * Anything else (first sight of a token, expiry, refresh, reload, a missing
   * scope) returns false and takes the full path below, which checks it all.
   */
  function servedFromMemory(req: Request, res: Response): boolean {
    const auth = req.headers.authorization;
    const remembered = deps.sessionTokens.verifiedSession;
    const cached = deps.tokens.cachedInstallation;
    if (auth === undefined || remembered === undefined || cached === undefined) return false;
    // The spelling every client of ours sends, without a regex match object; any other
    // spelling takes the rule itself (a miss here only means the full path decides).
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : BEARER_TOKEN.exec(auth)?.[1];
    if (token === undefined) return false;
    const session = remembered(token);
    if (session === undefined) return false;
    const installation = cached(session.storeId);
    if (installation === undefined || !hasRequired(installation.scopes)) return false;
    const installedAt = installation.installedAt.getTime();
    // A token of an earlier installation takes the full path (which may reload, then refuse).
    if (installedAt !== session.installedAt) return false;
    const { storeId: id, authTime } = session;
    res.locals.store = {
      storeId: id,
      scopes: installation.scopes,
      missingScopes: NONE_MISSING,
      client: deps.clients.forStore(id),
      sessionToken: () => deps.sessionTokens.mint(id, { installedAt, authTime }),
    };
    return true;
  }

  return function authenticated(): RequestHandler {
    return function storeAppAuthenticated(req: Request, res: Response, next: NextFunction) {
      if (servedFromMemory(req, res)) {
        next();
        return;
      }
      return authenticateFully(req, res, next);
    };
  };

  /** The core's decision; a page it answers keeps the frame-ancestors helmet set. */
  async function authenticateFully(req: Request, res: Response, next: NextFunction): Promise<void> {
    deps.launchWatch?.markHandled(req);
    const session = sessionOf(
      req,
      startSession ? (storeId) => startSession(req, storeId) : async () => {},
    );
    let decision: AuthDecision;
    try {
      decision = await authenticate(
        toCoreRequest(req, res, SILENT, session),
        existingAncestors(res),
      );
    } catch (err) {
      next(err);
      return;
    }
    if (!decision.ok) {
      sendCoreResponse(res, decision.response);
      return;
    }
    res.locals.store = decision.store;
    next();
  }
}

/**
 * `GET /auth/session-token` for a cookie-authenticated page: answers
 * `{ token, expiresAt }` for the session's store. Mount behind `authenticated()`.
 */
export function sessionTokenHandler(): RequestHandler {
  return async function storeAppSessionToken(_req, res, next) {
    try {
      sendCoreResponse(res, await sessionTokenResponse(res.locals.store));
    } catch (err) {
      next(err);
    }
  };
}
