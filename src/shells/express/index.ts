/**
 * The Express shell: `kit.middleware()` (one router layer: the request log, the
 * launch watch, then the kit's route table matched by the core's one rule, its browser
 * routes with the kit's header set) and `kit.authenticated()`. Built on the first call
 * of either; express and helmet are loaded then (./family.ts), never by an app that
 * only uses the Fetch shell. The kit's browser session is its own
 * (core/browser-session.ts under `session.cookieName`), never `req.session`.
 */
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { Logger } from 'pino';
import type { AuthDecision, AuthenticatedStore } from '../../authenticated/index.js';
import type { LaunchWatch } from '../../authenticated/launch-watch.js';
import { createBrowserSessions } from '../../core/browser-session.js';
import type { Drain } from '../../core/drain.js';
import type { CoreRequest } from '../../core/http.js';
import type { KitRoutes, RouteMatch } from '../../core/routes.js';
import type { KitSessionStore } from '../../core/session-store.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { kitSessionOf, sendCoreResponse, toCoreRequest } from './adapter.js';
import { expressAuthenticated } from './authenticated.js';
import { kitErrorHandler } from './errors.js';
import { expressFamily } from './family.js';
import { expressLaunchWatch } from './launch-watch.js';
import type { ResolvedSecurityHeadersOptions } from './options.js';
import { parserCheck } from './parser-check.js';
import { attachRequestLog } from './request-log.js';
import { headerApplier } from './security-headers.js';

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
  middleware(): Router;
  authenticated(): RequestHandler;
}

/** Builds the Express shell over the composition's route table and `authenticate`. */
export function createExpressShell(deps: ExpressShellDeps): ExpressShell {
  const { express } = expressFamily();
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
  const { drain } = deps;
  // Responses under way: those whose headers are not sent when draining begins say close too.
  const live = new Set<Response>();
  drain.onBegin(() => {
    for (const res of live) if (!res.headersSent) res.setHeader('connection', 'close');
    live.clear();
  });

  /** A kit route: the core's (wrapped) handler through the adapter; a throw reaches the error handler. */
  function runKit(m: RouteMatch, req: Request, res: Response, next: NextFunction): void {
    routes
      .run(m)(toCoreRequest(req, res, logger, () => sessionOf(req, res)))
      .then((r) => sendCoreResponse(res, req, r), next);
  }

  const router = express.Router();
  const webhookPath = routes.routes.find((r) => r.id === 'webhooks')?.path;
  const checkParsers = parserCheck(webhookPath, router, logger);
  // Every request of the app passes this one layer: the request log; the check for a
  // body parser mounted before the kit (once, on the first request); the launch watch,
  // before anything can answer the admin's launch of a page (it notices a launch that
  // never reaches kit.authenticated(), a static index.html, to say so in the 401s that
  // follow); then the kit's routes by the core's matching rule. A kit browser route gets
  // the kit's header set; a machine route (webhook deliveries, probes: no cookie, JSON no
  // browser renders) none. The app's own routes get nothing of the kit's (no headers
  // unless `securityHeaders.scope` is 'app', no session: `req.session` stays the app's),
  // so the kit is a guest in an existing app. One layer, and no route layers: each layer
  // Express dispatches costs every request of the app a dispatch and its garbage
  // (issues 15 and 24). The layer also counts the request in flight for a shutdown.
  router.use(function storeAppRequestStart(req, res, next) {
    // In flight until the response closes: a shutdown waits for it before storage closes.
    const leave = drain.enterRequest();
    // Draining: the client's next request goes over a new connection, to another instance.
    if (drain.draining()) res.setHeader('connection', 'close');
    else live.add(res);
    res.once('close', () => {
      live.delete(res);
      leave();
    });
    attachLog(req, res);
    checkParsers?.(req);
    watch?.note(req, res);
    const m = routes.match(req.method, req.path);
    if (m === undefined) {
      appHeaders?.(req, res);
      next();
      return;
    }
    if (m.route.audience === 'browser') applyHeaders?.(req, res);
    runKit(m, req, res, next);
  });
  const kitErrors = kitErrorHandler(logger);
  router.use(kitErrors);

  const authenticated = expressAuthenticated({
    authenticate: deps.authenticate,
    fromMemory: deps.fromMemory,
    launchWatch: watch,
    sessionOf,
    onError: kitErrors,
    applyHeaders: appHeaders ? undefined : applyHeaders,
    sessionCookieName: cookieName,
  });
  return { middleware: () => router, authenticated };
}
