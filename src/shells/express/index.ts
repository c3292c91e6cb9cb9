/**
 * The Express shell: `kit.middleware()` (one middleware function: the request log, the
 * launch watch, then the kit's route table matched by the core's one rule, its browser
 * routes with the kit's header set) and `kit.authenticated()`. Built on the first call
 * of either, over the app's own Express (checked to be Express 5; helmet is loaded for
 * `securityHeaders.helmet` only, ./family.ts), never by an app that only uses the Fetch
 * shell. The kit's browser session is its own
 * (core/browser-session.ts under `session.cookieName`), never `req.session`.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { AuthDecision, AuthenticatedStore } from '../../authenticated/index.js';
import type { LaunchWatch } from '../../authenticated/launch-watch.js';
import { createBrowserSessions } from '../../core/browser-session.js';
import type { Drain } from '../../core/drain.js';
import type { CoreRequest, CoreResponse } from '../../core/http.js';
import type { KitRoutes } from '../../core/routes.js';
import type { KitSessionStore } from '../../core/session-store.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { kitSessionOf, sendCoreResponse, toCoreRequest } from './adapter.js';
import { expressAuthenticated } from './authenticated.js';
import { kitErrorHandler } from './errors.js';
import { assertSupportedExpress } from './express-version.js';
import { inFlightCensus } from './in-flight.js';
import { expressLaunchWatch } from './launch-watch.js';
import type { ResolvedSecurityHeadersOptions } from './options.js';
import { parserCheck } from './parser-check.js';
import { attachRequestLog } from './request-log.js';
import { headerApplier } from './security-headers.js';
import type { KitMiddleware } from './types.js';

export type { AuthenticatedHandler, AuthenticatedLocals } from './types.js';

export interface ExpressShellDeps {
  routes: KitRoutes;
  logger: Logger;
  session: ResolvedHttpOptions['session'];
  /** Where the kit's browser sessions live (the app's `session.store`, else the database). */
  sessions: KitSessionStore;
  headers: {
    embedded: ResolvedHttpOptions['embedded'];
    options: ResolvedSecurityHeadersOptions;
    /** The app URL is HTTPS. */
    https: boolean;
  };
  authenticate(req: CoreRequest, frameAncestors?: string): Promise<AuthDecision>;
  fromMemory(authorization: string | undefined): AuthenticatedStore | undefined;
  launchWatch: LaunchWatch | undefined;
  /** The composition's drain state: requests counted in flight, `Connection: close` while draining. */
  drain: Drain;
}

export interface ExpressShell {
  middleware(): KitMiddleware;
  authenticated(): RequestHandler;
}

/**
 * `req.path` for the common request target, without Express's getter: the URL up to its
 * query, when `parseurl` (behind `req.path`) would take the same fast path (a target
 * starting with `/`, none of the characters that send it to `url.parse`); else
 * `req.path` itself. Every request of the app is matched against the kit's routes, and
 * the getter, on a request whose prototype Express sets per request, cost ~1.7 µs of
 * it on the route bench (issue 31).
 */
export function requestPath(req: Request): string {
  const url = req.url;
  if (url.charCodeAt(0) !== 0x2f) return req.path;
  let query = -1;
  for (let i = 1; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x3f) {
      if (query === -1) query = i;
    } else if (c <= 0x20 || c === 0x23 || c === 0xa0 || c === 0xfeff) {
      // Tab, newline, form feed, carriage return, space, '#', NBSP, BOM: parseurl's slow path.
      return req.path;
    }
  }
  return query === -1 ? url : url.slice(0, query);
}

/** Builds the Express shell over the composition's route table and `authenticate`. */
export function createExpressShell(deps: ExpressShellDeps): ExpressShell {
  // The shell runs on the app's Express (it loads no module of it): Express 4 fails here.
  assertSupportedExpress();
  const { routes, logger } = deps;
  const cookieName = deps.session.cookieName;
  const sessionFor = createBrowserSessions(deps.session, deps.sessions);
  const sessionOf = (req: Request, res: Response) => kitSessionOf(req, res, sessionFor, cookieName);
  const applyHeaders = headerApplier(
    deps.headers.embedded,
    deps.headers.options,
    deps.headers.https,
  );
  // 'app': every request passing kit.middleware() takes the kit's headers (as before
  // issue 32); 'kit': only the kit's browser routes and what authenticated() guards.
  const appHeaders = deps.headers.options.scope === 'app' ? applyHeaders : undefined;
  const watch = deps.launchWatch ? expressLaunchWatch(deps.launchWatch) : undefined;
  const attachLog = attachRequestLog(logger);
  // Requests under way, for a shutdown (counted lazily on HTTP/1: see in-flight.ts).
  const noteInFlight = inFlightCensus(deps.drain);

  const webhookPath = routes.routes.find((r) => r.id === 'webhooks')?.path;
  // An error of the kit's own work goes to the kit's handler (JSON or page, 503 for storage).
  const kitErrors = kitErrorHandler(logger);
  // Every request of the app passes this one function: the request log; the check for a
  // body parser mounted before the kit (once, on the first request); the launch watch,
  // before anything can answer the admin's launch of a page (it notices a launch that
  // never reaches kit.authenticated(), a static index.html, to say so in the 401s that
  // follow); then the kit's routes by the core's matching rule. A kit browser route gets
  // the kit's header set; a machine route (webhook deliveries, probes: no cookie, JSON no
  // browser renders) none. The app's own routes get nothing of the kit's (no headers
  // unless `securityHeaders.scope` is 'app', no session: `req.session` stays the app's),
  // so the kit is a guest in an existing app. A plain function, not a Router: a mounted
  // Router dispatches its own layer stack (a `next` closure and its state per request,
  // ~2 KB of garbage on the route bench) for what one call does (issues 15, 24 and 31).
  // It also counts the request in flight for a shutdown.
  const middleware: KitMiddleware = function storeAppRequestStart(req, res, next) {
    let answer: Promise<CoreResponse> | undefined;
    try {
      // In flight until the response closes: a shutdown waits for it before storage closes.
      noteInFlight(req, res);
      attachLog(req, res);
      checkParsers?.(req);
      watch?.note(req, res);
      const m = routes.match(req.method, requestPath(req));
      if (m === undefined) appHeaders?.(req, res);
      else {
        if (m.route.audience === 'browser') applyHeaders?.(req, res);
        answer = routes.run(m)(toCoreRequest(req, res, logger, () => sessionOf(req, res)));
      }
    } catch (err) {
      // The kit's own failure: answered by the kit's handler (an app's route never runs here).
      kitErrors(err, req, res, next);
      return;
    }
    if (answer === undefined) {
      next();
      return;
    }
    answer
      .then((r) => sendCoreResponse(res, req, r))
      .catch((err: unknown) => kitErrors(err, req, res, next));
  };
  const checkParsers = parserCheck(webhookPath, middleware, logger);

  const authenticated = expressAuthenticated({
    authenticate: deps.authenticate,
    fromMemory: deps.fromMemory,
    launchWatch: watch,
    sessionOf,
    onError: kitErrors,
    applyHeaders: appHeaders ? undefined : applyHeaders,
    sessionCookieName: cookieName,
  });
  return { middleware: () => middleware, authenticated };
}
