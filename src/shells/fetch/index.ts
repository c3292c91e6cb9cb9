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
import type { Drain } from '../../core/drain.js';
import { type CoreRequest, type CoreResponse, respond } from '../../core/http.js';
import type { KitRoutes, RouteMatch } from '../../core/routes.js';
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
  /**
   * Its in-memory form (`createMemoryAuthenticate`): a bearer token verified before,
   * for a store whose installation is in memory, by the same rules; undefined sends
   * the request down the full path.
   */
  fromMemory(authorization: string | undefined): AuthenticatedStore | undefined;
  /** The kit's header set, or undefined when `securityHeaders.enabled` is false. */
  headerSet: HeaderSet | undefined;
  /** The launch token's query parameter, dropped from the URL a launch redirects to. */
  launchParam: string | undefined;
  /** Said once when a request reaches the kit without a client address. */
  noAddressWarning: string;
  logger: Logger;
  /** The composition's drain state: requests counted in flight, `Connection: close` while draining. */
  drain: Drain;
}

/** A Fetch handler as Bun, Deno, Hono and the Node adapters call it. */
export type FetchHandler<A extends unknown[]> = (
  request: Request,
  ...rest: A
) => Response | Promise<Response>;

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
  /**
   * `handler` counted in flight until its `Response` is returned (a shutdown
   * waits for it), answering with `Connection: close` while the kit drains.
   */
  track<A extends unknown[]>(handler: FetchHandler<A>): FetchHandler<A>;
  /**
   * `fetch` without a promise for the requests that are not the kit's: null at once,
   * else the kit's answer (for the Hono mount, src/shells/hono/, one async hop less
   * on every app request).
   */
  route(
    request: Request,
    options?: FetchOptions | ((request: Request, env: unknown) => FetchOptions),
    env?: unknown,
  ): Promise<Response> | null;
  /** The in-memory `authenticate` of a bearer `Authorization` value (see FetchShellDeps). */
  fromMemory(authorization: string | undefined): AuthenticatedStore | undefined;
  /** The kit's header set, or undefined when `securityHeaders.enabled` is false. */
  headerSet: HeaderSet | undefined;
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

/**
 * Whether `url[from, to)` holds only what a plain path may (letters, digits, `_~-/`),
 * read without a regular expression: every request of the app passes here.
 */
function isPlainPath(url: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = url.charCodeAt(i);
    // a-z, A-Z (0x20 folds upper to lower case), 0-9, '-', '/', '_', '~'
    const lower = c | 0x20;
    if (lower >= 0x61 && lower <= 0x7a) continue;
    if ((c >= 0x2d && c <= 0x39 && c !== 0x2e) || c === 0x5f || c === 0x7e) continue;
    return false;
  }
  return true;
}

/** Whether `url[from, to)` holds `?`, `#` or `\`, which an authority cannot. */
function breaksAuthority(url: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = url.charCodeAt(i);
    if (c === 0x3f || c === 0x23 || c === 0x5c) return true;
  }
  return false;
}

/**
 * The path of a request's URL: `new URL(url).pathname`, without parsing the URL on
 * every request of the app. `Request.url` is already the URL parser's serialisation,
 * where the path runs from the first `/` after `scheme://host` to `?` or `#`; a path
 * with anything but letters, digits, `_~-/` (percent-escapes, dot segments, a
 * backslash) or a URL of another shape goes through the parser.
 */
export function pathnameOf(url: string): string {
  const from = url.startsWith('https://') ? 8 : url.startsWith('http://') ? 7 : -1;
  const slash = from === -1 ? -1 : url.indexOf('/', from);
  if (slash !== -1) {
    let end = url.indexOf('?', slash);
    if (end === -1) end = url.indexOf('#', slash);
    if (end === -1) end = url.length;
    if (isPlainPath(url, slash, end) && !breaksAuthority(url, from, slash)) {
      return end === url.length ? url.slice(slash) : url.slice(slash, end);
    }
  }
  return new URL(url).pathname;
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

  /**
   * While draining, the answer tells the client to take its next request elsewhere. Not
   * when the kit watches the Node server: it marks each connection's newest answer itself,
   * and a header here would mark an answer with another pipelined behind it, which Node
   * would then drop (src/shutdown/closing-connection.ts).
   */
  function closing(response: Response): Response {
    if (!deps.drain.draining() || deps.drain.countedByServer()) return response;
    try {
      response.headers.set('connection', 'close');
      return response;
    } catch {
      // Immutable headers (a Response from fetch(), Response.redirect): a copy takes them.
      const copy = new Response(response.body, response);
      copy.headers.set('connection', 'close');
      return copy;
    }
  }

  function warnNoAddress(options: FetchOptions): void {
    if (warnedNoAddress || options.remoteAddress !== undefined) return;
    warnedNoAddress = true;
    logger.warn({ setting: 'remoteAddress' }, deps.noAddressWarning);
  }

  /** The kit's answer to a request its route table matched. */
  async function run(
    request: Request,
    options: FetchOptions,
    path: string,
    match: RouteMatch,
  ): Promise<Response> {
    warnNoAddress(options);
    const { core, cookies } = coreOf(request, options, path);
    const browser = match.route.audience === 'browser';
    const leave = deps.drain.enterRequest();
    try {
      const r = await deps.routes.run(match)(core);
      r.cookies.push(...cookies);
      return closing(answer(request, r, browser));
    } catch (err) {
      // No stack or message of ours reaches the client: the log has it.
      logger.error({ err, route: match.route.id }, 'kit route failed');
      return closing(answer(request, INTERNAL(), browser));
    } finally {
      leave();
    }
  }

  /** `options` as a function (of `request` and `env`): called only for a request the kit answers. */
  function route(
    request: Request,
    options: FetchOptions | ((request: Request, env: unknown) => FetchOptions) = {},
    env?: unknown,
  ): Promise<Response> | null {
    const path = relativePath(pathnameOf(request.url), deps.appPath);
    const match = path === undefined ? undefined : deps.routes.match(request.method, path);
    if (match === undefined || path === undefined) return null;
    return run(
      request,
      typeof options === 'function' ? options(request, env) : options,
      path,
      match,
    );
  }

  return {
    route,
    fromMemory: deps.fromMemory,
    headerSet,
    async fetch(request, options = {}) {
      return route(request, options);
    },
    async authenticate(request, options = {}) {
      // An embedded page's API calls: a bearer token seen before, answered from memory
      // without building a core request or its session (as `kit.authenticated()` does).
      const known = deps.fromMemory(request.headers.get('authorization') ?? undefined);
      if (known !== undefined) return known;
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
    track(handler) {
      return async function storeAppTracked(request, ...rest) {
        const leave = deps.drain.enterRequest();
        try {
          return closing(await handler(request, ...rest));
        } finally {
          leave();
        }
      };
    },
  };
}
