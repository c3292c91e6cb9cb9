/**
 * `kit.authenticated()` on Express: the core's `authenticate` (src/authenticated/)
 * behind its synchronous in-memory form. A bearer token this process verified
 * before, for a store whose installation is in memory, sets `res.locals.store`
 * without a promise (`fromMemory`: the same rules as the full path); anything else
 * takes the core's full path, whose refusal is written as it is.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import {
  type AuthDecision,
  type AuthenticateDeps,
  type AuthenticatedStore,
  createAuthenticate,
  createMemoryAuthenticate,
  sessionTokenResponse,
} from '../../authenticated/index.js';
import type { LaunchWatch } from '../../authenticated/launch-watch.js';
import type { ResolvedAuthenticatedOptions } from '../../authenticated/options.js';
import type { LaunchVerifier, SessionTokenIssuer } from '../../authenticated/session-token.js';
import type { ClientFactory } from '../../client/factory.js';
import type { CoreRequest, CoreSession } from '../../core/http.js';
import type { TokenManager } from '../../refresh/manager.js';
import { expressSessionOf, SILENT, sendCoreResponse, toCoreRequest } from './adapter.js';
import { type ExpressLaunchWatch, expressLaunchWatch } from './launch-watch.js';
import { existingAncestors } from './pages.js';

export interface ExpressAuthenticatedDeps {
  /** The core's `authenticate` (built once per kit, shared with the Fetch shell). */
  authenticate(req: CoreRequest, frameAncestors?: string): Promise<AuthDecision>;
  /** Its in-memory form (`createMemoryAuthenticate`). */
  fromMemory(authorization: string | undefined): AuthenticatedStore | undefined;
  launchWatch?: ExpressLaunchWatch | undefined;
  /**
   * The kit's browser session of a request (its own cookie, never `req.session`).
   * Absent: the app's own express-session (`createAuthenticated` outside a kit).
   */
  sessionOf?: ((req: Request, res: Response) => CoreSession) | undefined;
  /**
   * Answers an unexpected error (the session store failing, a bug) as the kit's own
   * routes do: no detail, logged, counted. Absent: `next(err)` (the app's handler).
   */
  onError?: ErrorRequestHandler | undefined;
  /** Sets the kit's headers on the answer (the kit's `securityHeaders.scope: 'kit'`). */
  applyHeaders?: ((req: Request, res: Response) => void) | undefined;
  /** Binds the browser session to a store (regenerating its id). @default express-session's */
  startSession?: ((req: Request, storeId: string) => Promise<void>) | undefined;
  /** The session cookie's name (a request carrying it presented credentials). */
  sessionCookieName: string;
}

/** `kit.authenticated()`: each call returns the handler (one handler serves every route). */
export function expressAuthenticated(deps: ExpressAuthenticatedDeps): () => RequestHandler {
  const { authenticate, fromMemory, launchWatch, startSession, sessionCookieName } = deps;
  const { applyHeaders, onError } = deps;
  const sessionFor =
    deps.sessionOf ??
    ((req: Request) =>
      expressSessionOf(
        req,
        sessionCookieName,
        startSession ? (storeId) => startSession(req, storeId) : undefined,
      ));

  /** The core's decision; a page it answers keeps the frame-ancestors the headers set. */
  async function authenticateFully(req: Request, res: Response, next: NextFunction): Promise<void> {
    launchWatch?.markHandled(req);
    const session = sessionFor(req, res);
    let decision: AuthDecision;
    try {
      decision = await authenticate(
        toCoreRequest(req, res, SILENT, session),
        existingAncestors(res),
      );
    } catch (err) {
      if (onError) onError(err, req, res, next);
      else next(err);
      return;
    }
    if (!decision.ok) {
      sendCoreResponse(res, req, decision.response);
      return;
    }
    res.locals.store = decision.store;
    next();
  }

  function storeAppAuthenticated(req: Request, res: Response, next: NextFunction) {
    // What the app serves behind authenticated() is the kit's page: it takes the kit's
    // headers whatever their scope (before the decision: a refusal page carries them too).
    applyHeaders?.(req, res);
    const store = fromMemory(req.headers.authorization);
    if (store !== undefined) {
      res.locals.store = store;
      next();
      return;
    }
    return authenticateFully(req, res, next);
  }
  return () => storeAppAuthenticated;
}

/** What `createAuthenticated` builds `kit.authenticated()` from, outside a kit. */
export interface AuthenticatedDeps {
  tokens: AuthenticateDeps['tokens'] &
    Partial<Pick<TokenManager, 'cachedInstallation' | 'cachedTicket' | 'stillCached'>>;
  clients: Pick<ClientFactory, 'forStore'>;
  /** Scopes the app is configured to need; a grant lacking one sends the merchant through /auth. */
  scopes: readonly string[];
  /** 'record': a narrower grant is served (the route sees `missingScopes`). @default 'refuse' */
  narrowerScopes?: 'refuse' | 'record';
  sessionTokens: SessionTokenIssuer;
  /** Absent when the app is not embedded. */
  launch?: { param: string; verifier: LaunchVerifier };
  launchWatch?: LaunchWatch;
  /** Binds the browser session to a store (regenerating its id). */
  startSession?: (req: Request, storeId: string) => Promise<void>;
  /** Absolute URL of the install begin route (`{appUrl}/auth`). */
  beginUrl: string;
  /** Absolute lifetime of a merchant session, in seconds. @default 86400 */
  maxSessionAgeSeconds?: number;
  options: ResolvedAuthenticatedOptions;
  /** @default 'store_app.sid' */
  sessionCookieName?: string;
  logger?: { warn(obj: Record<string, unknown>, msg: string): void };
}

/**
 * `authenticated()` over the kit's parts, outside a kit (tests, benchmarks, a
 * worker); the kit builds its own from the composition's one `authenticate`.
 */
export function createAuthenticated(deps: AuthenticatedDeps): () => RequestHandler {
  const client = (storeId: string) => deps.clients.forStore(storeId);
  const authenticate = createAuthenticate({
    sessionTokens: deps.sessionTokens,
    tokens: deps.tokens,
    client,
    scopes: deps.scopes,
    narrowerScopes: deps.narrowerScopes,
    launch: deps.launch,
    launchWatch: deps.launchWatch,
    beginUrl: deps.beginUrl,
    reauthorizeHeader: deps.options.reauthorizeHeader,
    maxSessionAgeSeconds: deps.maxSessionAgeSeconds,
    logger: deps.logger,
  });
  return expressAuthenticated({
    authenticate,
    fromMemory: createMemoryAuthenticate({
      sessionTokens: deps.sessionTokens,
      tokens: deps.tokens,
      client,
      scopes: deps.scopes,
    }),
    launchWatch: deps.launchWatch ? expressLaunchWatch(deps.launchWatch) : undefined,
    startSession: deps.startSession,
    sessionCookieName: deps.sessionCookieName ?? 'store_app.sid',
  });
}

/**
 * `GET /auth/session-token` behind `authenticated()`: answers `{ token, expiresAt }`
 * for the session's store.
 */
export function sessionTokenHandler(): RequestHandler {
  return async function storeAppSessionToken(req, res, next) {
    try {
      sendCoreResponse(res, req, await sessionTokenResponse(res.locals.store));
    } catch (err) {
      next(err);
    }
  };
}
