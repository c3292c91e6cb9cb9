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
import { NotInstalledError, ReauthorizationRequiredError } from '../client/errors.js';
import type { ClientFactory } from '../client/factory.js';
import type { StoreApiClient } from '../client/index.js';
import { StorageError, StoreAppError } from '../errors/index.js';
import { sendPage, sendReauthorize } from '../install/pages.js';
import { RefreshClientRejectedError } from '../refresh/errors.js';
import type { TokenManager } from '../refresh/manager.js';
import {
  CROSS_SITE_REQUEST,
  SCOPES_CHANGED,
  SESSION_REQUIRED,
  SESSION_TOKEN_INVALID,
} from './errors.js';
import type { LaunchWatch } from './launch-watch.js';
import type { ResolvedAuthenticatedOptions } from './options.js';
import {
  isPlausibleStoreId,
  type LaunchVerifier,
  SessionTokenError,
  type SessionTokenIssuer,
} from './session-token.js';

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
  launchWatch?: Pick<LaunchWatch, 'markHandled' | 'explain'>;
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

/** True for a top-level page load; false for fetch/XHR (which must not get a redirect). */
export function isPageNavigation(req: Request): boolean {
  if (req.get('x-requested-with')) return false;
  if (/^bearer\s/i.test(req.get('authorization') ?? '')) return false;
  const mode = req.get('sec-fetch-mode');
  if (mode) return mode === 'navigate';
  const accept = req.get('accept') ?? '';
  return req.method === 'GET' && /\btext\/html\b/i.test(accept);
}

/** The token of an `Authorization: Bearer <token>` header (the same rule findStore applies). */
const BEARER_TOKEN = /^Bearer\s+(\S+)\s*$/i;
/** `missingScopes` of a store that granted every scope: one frozen array for all requests. */
const NONE_MISSING: readonly string[] = Object.freeze([]);

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request that only the session cookie authenticates was sent by
 * another site (CSRF). Fetch Metadata decides when the browser sends it;
 * otherwise the `Origin` header (an opaque `null` origin counts as foreign).
 * Same-site senders (the local admin on another port) pass, as do non-browser
 * clients that send neither header.
 */
export function isCrossSiteWrite(req: Request, appOrigin: string): boolean {
  if (SAFE_METHODS.has(req.method)) return false;
  const site = req.get('sec-fetch-site');
  if (site !== undefined) return site === 'cross-site';
  const origin = req.get('origin');
  return origin !== undefined && origin !== appOrigin;
}

function isEmbeddedLoad(req: Request): boolean {
  return req.get('sec-fetch-dest') === 'iframe' || req.query.embedded === '1';
}

export function createAuthenticated(deps: AuthenticatedDeps) {
  const { options } = deps;
  const required = [...deps.scopes];
  const missingFrom = (granted: readonly string[]) => required.filter((s) => !granted.includes(s));
  const hasRequired = (granted: readonly string[]) => required.every((s) => granted.includes(s));
  const maxSessionAgeMs = (deps.maxSessionAgeSeconds ?? 86_400) * 1000;
  const appOrigin = new URL(deps.beginUrl).origin;

  function authUrlFor(storeId: string | undefined): string {
    const url = new URL(deps.beginUrl);
    if (storeId) url.searchParams.set('store_id', storeId);
    return url.toString();
  }

  function reauthorize(
    req: Request,
    res: Response,
    storeId: string | undefined,
    code: string,
    message: string,
  ): void {
    const url = authUrlFor(storeId);
    res.set('Cache-Control', 'no-store');
    if (!isPageNavigation(req)) {
      res.set(options.reauthorizeHeader, url);
      res.status(401).json({ code, message });
      return;
    }
    if (!isEmbeddedLoad(req)) {
      res.redirect(302, url);
      return;
    }
    // Inside the admin's iframe the OAuth pages cannot load (they refuse framing): a styled
    // page saying why, whose one button (or script) leaves the frame.
    sendReauthorize(res, { url, code });
  }

  function unavailable(req: Request, res: Response, err: StoreAppError) {
    res.set('Retry-After', '5');
    res.set('Cache-Control', 'no-store');
    // A merchant opening the page gets the kit's styled page, a fetch gets JSON.
    if (isPageNavigation(req)) {
      sendPage(res, {
        status: 503,
        code: err.code,
        title: 'Temporarily unavailable',
        message:
          'The app cannot reach its database or the store platform right now. Please reload the page in a moment.',
      });
      return;
    }
    res.status(503).json({
      code: err.code,
      message: 'The app cannot reach its storage or the platform right now; try again shortly.',
    });
  }

  /**
   * The app's own credentials were refused on a refresh: a configuration
   * error the token manager logged with the settings to fix. The merchant is
   * told no setting and no secret, and not to retry (500, not 503).
   */
  function misconfigured(req: Request, res: Response, err: RefreshClientRejectedError) {
    res.set('Cache-Control', 'no-store');
    const message =
      "The store platform did not accept this app's credentials. Nothing was lost; the app's developer has to correct its configuration.";
    if (isPageNavigation(req)) {
      sendPage(res, { status: 500, code: err.code, title: 'App not set up correctly', message });
      return;
    }
    res.status(500).json({ code: err.code, message });
  }

  /** The store named by the request, and whether a bearer token (not a cookie) named it. */
  async function findStore(
    req: Request,
    res: Response,
  ): Promise<{
    storeId?: string;
    /** When the session began, epoch seconds (carried into renewed session tokens). */
    authTime?: number;
    /** The installation a bearer token was minted for (`installedAt`, epoch ms). */
    installedAt?: number;
    bearerError?: StoreAppError;
    /** Only the session cookie named the store (no bearer or launch token). */
    byCookie?: boolean;
    handled?: boolean;
  }> {
    const auth = req.get('authorization');
    // Other schemes (a staging proxy's Basic auth) are not ours: fall through to the cookie.
    if (auth !== undefined && /^bearer(\s|$)/i.test(auth)) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
      if (!m?.[1]) {
        return {
          bearerError: new StoreAppError(
            'SESSION_TOKEN_INVALID',
            'The Authorization header must be "Bearer <app session token>".',
          ),
        };
      }
      try {
        return await deps.sessionTokens.verifySession(m[1]);
      } catch (err) {
        if (err instanceof StoreAppError) return { bearerError: err };
        throw err;
      }
    }
    const launchToken = deps.launch ? req.query[deps.launch.param] : undefined;
    // The admin only ever frames the app with a launch token. A browser that says this is
    // a top-level page (a link someone handed out, carrying their own store's token) is
    // not the admin: such a token signs nobody in, so it cannot switch this browser to
    // another store (login CSRF). Without Fetch Metadata (old browsers, non-browsers) the
    // signature, audience, age and single use still decide.
    const dest = req.get('sec-fetch-dest');
    const framed = dest === undefined || dest === 'iframe' || dest === 'frame';
    if (deps.launch && typeof launchToken === 'string' && !framed) {
      deps.logger?.warn({ dest }, 'Launch token outside a frame ignored (not from the admin).');
    }
    if (deps.launch && typeof launchToken === 'string' && framed) {
      let launched: string | undefined;
      try {
        launched = await deps.launch.verifier.verify(launchToken);
      } catch (err) {
        if (!(err instanceof SessionTokenError)) throw err;
        // A stale or replayed launch link falls back to the session cookie.
        deps.logger?.warn({ code: err.code }, 'Launch token refused.');
      }
      if (launched !== undefined) {
        if (deps.startSession) {
          try {
            await deps.startSession(req, launched);
          } catch (cause) {
            // The session store failed: answer 503 rather than carry on with the old session.
            if (cause instanceof StoreAppError) throw cause;
            throw new StorageError('Could not start the app session (session store failed).', {
              cause,
            });
          }
        }
        return { storeId: launched, authTime: Math.floor(Date.now() / 1000) };
      }
    }
    // A cookie session lives `maxSessionAgeSeconds` from its start, however active it is
    // (express-session's store expiry is extended by every request).
    if (req.session?.storeId !== undefined && req.session.authAt === undefined) {
      // A session bound before sessions carried their start (an upgrade, or an app that
      // set storeId itself): its lifetime counts from now.
      req.session.authAt = Date.now();
    }
    const authAt = req.session?.authAt;
    const current =
      typeof authAt === 'number' && Date.now() - authAt < maxSessionAgeMs
        ? req.session?.storeId
        : undefined;
    const sessionStore = current;
    const queryStore = req.query.store_id;
    if (
      isPageNavigation(req) &&
      isPlausibleStoreId(queryStore) &&
      sessionStore !== undefined &&
      queryStore !== sessionStore
    ) {
      // The merchant opened the app for another store than the session's: install/log in there.
      reauthorize(req, res, queryStore, SESSION_REQUIRED, 'Sign in to this store first.');
      return { handled: true };
    }
    return {
      storeId: sessionStore,
      authTime: typeof authAt === 'number' ? Math.floor(authAt / 1000) : undefined,
      byCookie: true,
    };
  }

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
    const token = BEARER_TOKEN.exec(auth)?.[1];
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

  async function authenticateFully(req: Request, res: Response, next: NextFunction): Promise<void> {
    let storeId: string | undefined;
    let authTime: number | undefined;
    deps.launchWatch?.markHandled(req);
    try {
      const found = await findStore(req, res);
      if (found.handled) return;
      if (found.bearerError) {
        res.set('Cache-Control', 'no-store');
        res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
        res.status(401).json({ code: found.bearerError.code, message: found.bearerError.message });
        return;
      }
      if (found.byCookie && found.storeId !== undefined && isCrossSiteWrite(req, appOrigin)) {
        // The browser attached the cookie to a request another site made: never act on it.
        deps.logger?.warn(
          { method: req.method, site: req.get('sec-fetch-site') ?? null },
          'Cross-site write with the session cookie refused.',
        );
        res.set('Cache-Control', 'no-store');
        res.status(403).json({
          code: CROSS_SITE_REQUEST,
          message:
            'This request came from another site; the app refuses cookie-authenticated writes from other sites. Send the app session token (Authorization: Bearer) or call from the app itself.',
        });
        return;
      }
      storeId = found.storeId;
      authTime = found.authTime;
      if (!storeId) {
        const q = req.query.store_id;
        reauthorize(
          req,
          res,
          isPlausibleStoreId(q) ? q : undefined,
          SESSION_REQUIRED,
          deps.launchWatch?.explain(req) ??
            'No app session: open the app from the store admin, or send an app session token.',
        );
        return;
      }
      let installation = await deps.tokens.getInstallation(storeId);
      if (
        found.installedAt !== undefined &&
        installation.installedAt.getTime() !== found.installedAt
      ) {
        // The memory copy may predate a reinstall in another process; ask the database.
        installation = await deps.tokens.reload(storeId);
        if (installation.installedAt.getTime() !== found.installedAt) {
          // Minted for an installation that has since ended (uninstall, then reinstall):
          // the uninstall ended that session, as it ends cookie sessions.
          reauthorize(
            req,
            res,
            storeId,
            SESSION_TOKEN_INVALID,
            'The app session token belongs to an earlier installation of this store; open the app from the store admin again.',
          );
          return;
        }
      }
      let missing = missingFrom(installation.scopes);
      if (missing.length > 0) {
        // The memory copy may predate a reinstall in another process; ask the database.
        installation = await deps.tokens.reload(storeId);
        missing = missingFrom(installation.scopes);
      }
      if (missing.length > 0 && deps.narrowerScopes !== 'record') {
        reauthorize(
          req,
          res,
          storeId,
          SCOPES_CHANGED,
          `The app now needs scopes the merchant has not granted (${missing.join(', ')}); authorise again.`,
        );
        return;
      }
      const id = storeId;
      const installedAt = installation.installedAt.getTime();
      res.locals.store = {
        storeId: id,
        scopes: installation.scopes,
        missingScopes: missing,
        client: deps.clients.forStore(id),
        // A renewal keeps the session's start: it cannot outlive the session.
        sessionToken: () => deps.sessionTokens.mint(id, { installedAt, authTime }),
      };
      next();
    } catch (err) {
      if (err instanceof NotInstalledError || err instanceof ReauthorizationRequiredError) {
        reauthorize(req, res, storeId, err.code, err.message);
        return;
      }
      if (err instanceof RefreshClientRejectedError) {
        misconfigured(req, res, err);
        return;
      }
      if (err instanceof StoreAppError && (err.status === 503 || err instanceof StorageError)) {
        unavailable(req, res, err);
        return;
      }
      next(err);
    }
  }
}

/**
 * `GET /auth/session-token` for a cookie-authenticated page: answers
 * `{ token, expiresAt }` for the session's store. Mount behind `authenticated()`.
 */
export function sessionTokenHandler(): RequestHandler {
  return async function storeAppSessionToken(_req, res, next) {
    try {
      const { token, expiresAt } = await res.locals.store.sessionToken();
      res.set('Cache-Control', 'no-store');
      res.json({ token, expiresAt: expiresAt.toISOString() });
    } catch (err) {
      if (err instanceof SessionTokenError) {
        // The session ended (its absolute lifetime): the merchant opens the app again.
        res.set('Cache-Control', 'no-store');
        res.status(401).json({ code: err.code, message: err.message });
        return;
      }
      next(err);
    }
  };
}
