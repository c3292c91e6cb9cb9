/**
 * The Fetch shell: the kit's route table as `fetch(request) → Response | null`,
 * `authenticate(request)` for app routes and `secureResponse(request, response)` for
 * their answers, for Hono, Bun.serve, Deno.serve and Next.js route handlers. The
 * same route table, matching rule, core handlers and header set as the Express
 * shell, and the same browser sessions (see ./session.ts).
 */
import type { Logger } from 'pino';
import type { AuthDecision, AuthenticatedStore } from '../../authenticated/index.js';
import { isBearerRequest } from '../../core/bearer.js';
import { createBrowserSessions } from '../../core/browser-session.js';
import { readCookie } from '../../core/cookies.js';
import { type CoreRequest, type CoreResponse, respond } from '../../core/http.js';
import type { KitRoutes } from '../../core/routes.js';
import { applyHeaderSet, type HeaderSet } from '../../core/security-headers.js';
import type { KitSessionStore } from '../../core/session-store.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { toCoreRequest, toResponse } from './adapter.js';
import { launchRedirect } from './launch.js';

/** Per-request facts a `Request` does not carry. */
export interface FetchOptions {
  /**
   * The client's address as your server trusts it: it keys the install
   * callback's per-source limit. Hono on Node: `c.env.incoming.socket.remoteAddress`;
   * Bun: `server.requestIP(req)?.address`; Deno: `info.remoteAddr.hostname`;
   * behind a reverse proxy, the address your trusted proxy reports.
   * @default undefined (callers without one share one bucket; the kit warns)
   */
  remoteAddress?: string;
}

export interface FetchShellDeps {
  /** The kit's route table (paths under `appPath`). */
  routes: KitRoutes;
  /** The app URL's path without its trailing slash (`''` at the root). */
  appPath: string;
  session: ResolvedHttpOptions['session'];
  sessionStore: KitSessionStore;
  /** The core's `authenticate` (bearer, launch, cookie session). */
  authenticate(req: CoreRequest): Promise<AuthDecision>;
  /** The kit's header set, or undefined when `securityHeaders.enabled` is false. */
  headerSet: HeaderSet | undefined;
  /** The launch token's query parameter, dropped from the URL a launch redirects to. */
  launchParam: string | undefined;
  /** Said once when a request reaches the kit without a client address. */
  noAddressWarning: string;
  logger: Logger;
}

export interface FetchShell {
  /** The kit's answer to `request`, or null when it is not a kit route. */
  fetch(request: Request, options?: FetchOptions): Promise<Response | null>;
  /**
   * The store of a request (app session token, the admin's launch, or the
   * session cookie), or the `Response` to send: a launch's redirect carrying
   * the new session cookie, re-authorisation, 401, 403, 503, 500.
   */
  authenticate(request: Request, options?: FetchOptions): Promise<AuthenticatedStore | Response>;
  /** `response` with the kit's header set added (the app's own headers kept). */
  secureResponse(request: Request, response: Response): Response;
}

const INTERNAL = () =>
  respond.json(500, { code: 'INTERNAL_ERROR', message: 'The app could not answer.' });

/** The path under `appPath` (matched case-insensitively), or undefined when outside it. */
function relativePath(pathname: string, appPath: string): string | undefined {
  if (appPath === '') return pathname;
  if (pathname.length < appPath.length) return undefined;
  const head = pathname.slice(0, appPath.length);
  if (head !== appPath && head.toLowerCase() !== appPath.toLowerCase()) return undefined;
  const rest = pathname.slice(appPath.length);
  if (rest === '') return '/';
  return rest.startsWith('/') ? rest : undefined;
}

/** Builds the Fetch shell over the kit's route table. */
export function createFetchShell(deps: FetchShellDeps): FetchShell {
  const sessions = createBrowserSessions(deps.session, deps.sessionStore);
  const { headerSet, logger } = deps;
  let warnedNoAddress = false;

  /** The core request of `request` with its session, and the cookies its session changes need. */
  function coreOf(request: Request, options: FetchOptions, path?: string) {
    const { session, cookies } = sessions(
      readCookie(request.headers.get('cookie') ?? undefined, deps.session.cookieName),
    );
    const ctx = { remoteAddress: options.remoteAddress, log: logger, session };
    return { core: toCoreRequest(request, path === undefined ? ctx : { ...ctx, path }), cookies };
  }

  /** A kit answer as a `Response`, with the header set of a browser route. */
  function answer(request: Request, r: CoreResponse, browser: boolean): Response {
    const response = toResponse(r, request.method.toUpperCase() === 'HEAD');
    if (browser && headerSet) {
      const bearer = isBearerRequest(request.headers.get('authorization') ?? undefined);
      applyHeaderSet(response.headers, headerSet, bearer);
    }
    return response;
  }

  function warnNoAddress(options: FetchOptions): void {
    if (warnedNoAddress || options.remoteAddress !== undefined) return;
    warnedNoAddress = true;
    logger.warn({ setting: 'remoteAddress' }, deps.noAddressWarning);
  }

  return {
    async fetch(request, options = {}) {
      const pathname = new URL(request.url).pathname;
      const path = relativePath(pathname, deps.appPath);
      const match =
        path === undefined ? undefined : deps.routes.match(request.method.toUpperCase(), path);
      if (!match) return null;
      warnNoAddress(options);
      const { core, cookies } = coreOf(request, options, path);
      const browser = match.route.audience === 'browser';
      try {
        const r = await deps.routes.run(match)(core);
        r.cookies.push(...cookies);
        return answer(request, r, browser);
      } catch (err) {
        // No stack or message of ours reaches the client: the log has it.
        logger.error({ err, route: match.route.id }, 'kit route failed');
        return answer(request, INTERNAL(), browser);
      }
    },
    async authenticate(request, options = {}) {
      const { core, cookies } = coreOf(request, options);
      let decision: AuthDecision;
      try {
        decision = await deps.authenticate(core);
      } catch (err) {
        logger.error({ err }, 'authenticate failed');
        return answer(request, INTERNAL(), true);
      }
      if (!decision.ok) {
        decision.response.cookies.push(...cookies);
        return answer(request, decision.response, true);
      }
      // The new session's cookie reaches the browser on a redirect to the same URL without
      // the single-use launch token (kept out of history and of the page's Referer).
      if (decision.launched && deps.launchParam !== undefined) {
        const r = launchRedirect(request, deps.launchParam);
        r.cookies.push(...cookies);
        return answer(request, r, true);
      }
      return decision.store;
    },
    secureResponse(request, response) {
      if (!headerSet) return response;
      const bearer = isBearerRequest(request.headers.get('authorization') ?? undefined);
      try {
        applyHeaderSet(response.headers, headerSet, bearer);
        return response;
      } catch {
        // Immutable headers (a Response from fetch(), Response.redirect): a copy takes them.
        const copy = new Response(response.body, response);
        applyHeaderSet(copy.headers, headerSet, bearer);
        return copy;
      }
    },
  };
}
