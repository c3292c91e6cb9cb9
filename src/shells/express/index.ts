/**
 * The Express shell: `kit.middleware()` (one router layer: the request log, the
 * launch watch, the kit's header set and the session for browser requests, then the
 * kit's route table matched by the core's one rule) and `kit.authenticated()`. Built
 * on the first call of either; express, express-session and helmet are loaded then
 * (./family.ts), never by an app that only uses the Fetch shell.
 */
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { Store } from 'express-session';
import type { Logger } from 'pino';
import type { AuthDecision, AuthenticatedStore } from '../../authenticated/index.js';
import type { LaunchWatch } from '../../authenticated/launch-watch.js';
import type { Drain } from '../../core/drain.js';
import type { CoreRequest } from '../../core/http.js';
import type { KitRoutes, RouteMatch } from '../../core/routes.js';
import type { CallbackSessionStore, KitSessionStore } from '../../core/session-store.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { sendCoreResponse, toCoreRequest } from './adapter.js';
import { expressAuthenticated } from './authenticated.js';
import { kitErrorHandler } from './errors.js';
import { expressFamily } from './family.js';
import { expressLaunchWatch } from './launch-watch.js';
import type { ResolvedSecurityHeadersOptions } from './options.js';
import { attachRequestLog } from './request-log.js';
import { headerApplier } from './security-headers.js';
import { hasNoBrowserSession, sessionMiddleware } from './session.js';
import { expressSessionStore } from './session-store.js';

export type { AuthenticatedHandler, AuthenticatedLocals } from './types.js';

export interface ExpressShellDeps {
  routes: KitRoutes;
  logger: Logger;
  session: ResolvedHttpOptions['session'];
  /** The built-in sessions (used unless `session.store` names the app's own store). */
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
  const store =
    (deps.session.store as (CallbackSessionStore & Store) | undefined) ??
    expressSessionStore(deps.sessions);
  const session = sessionMiddleware(deps.session, store);
  const applyHeaders = headerApplier(
    deps.headers.embedded,
    deps.headers.options,
    deps.headers.https,
  );
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
      .run(m)(toCoreRequest(req, res, logger, undefined, cookieName))
      .then((r) => sendCoreResponse(res, req, r), next);
  }

  const router = express.Router();
  // Every request of the app passes this one layer: the request log; the launch watch,
  // before anything can answer the admin's launch of a page (it notices a launch that
  // never reaches kit.authenticated(), a static index.html, to say so in the 401s that
  // follow); then the kit's routes by the core's matching rule. A browser request gets
  // the kit's header set and its session first; a machine route (webhook deliveries,
  // probes: no cookie, JSON no browser renders) neither. One layer, and no route layers:
  // each layer Express dispatches costs every request of the app a dispatch and its
  // garbage (issues 15 and 24). The layer also counts the request in flight for a shutdown.
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
    watch?.note(req, res);
    const m = routes.match(req.method, req.path);
    if (m !== undefined && m.route.audience === 'machine') {
      runKit(m, req, res, next);
      return;
    }
    applyHeaders?.(req, res);
    if (hasNoBrowserSession(req)) {
      if (m === undefined) next();
      else runKit(m, req, res, next);
      return;
    }
    // The app's requests take express-session's own callback: no closure of ours.
    if (m === undefined) session(req, res, next);
    else session(req, res, (err?: unknown) => (err ? next(err) : runKit(m, req, res, next)));
  });
  router.use(kitErrorHandler(logger));

  const authenticated = expressAuthenticated({
    authenticate: deps.authenticate,
    fromMemory: deps.fromMemory,
    launchWatch: watch,
    sessionCookieName: cookieName,
  });
  return { middleware: () => router, authenticated };
}
