/**
 * The kit's route table and the one rule both shells match it by. Each kit route
 * (install begin and callback, the session-token swap, the webhook receiver, health)
 * is `{ id, methods, path, audience, span, handler }`, its path relative to the app
 * URL's path. Both shells mount this table; neither spells a path of its own.
 *
 * Matching (DECISIONS.md): the path case-insensitively, with or without one trailing
 * slash (Express's default, non-strict routing); HEAD is served by a GET route; a kit
 * path hit with another method answers 405 with `Allow`. Spans and counters are
 * started here, around the core handler, so both shells emit the same.
 */
import { recordError, traceHandler } from '../telemetry/index.js';
import { withChallenge } from './challenge.js';
import type { CoreHandler, CoreRequest, CoreResponse } from './http.js';
import { routeKey } from './route-path.js';

/** The kit's routes by name (stable: logs, tests and docs refer to them). */
export type KitRouteId =
  | 'install.begin'
  | 'install.callback'
  | 'session-token'
  | 'browser-module'
  | 'webhooks'
  | 'health';

export interface KitRoute {
  id: KitRouteId;
  /** Upper-case methods; a GET route also answers HEAD. */
  methods: readonly string[];
  /** Path under the app URL's path, as configured (`/auth`, `/webhooks`). */
  path: string;
  /**
   * `browser`: a page or a script of the app calls it (session, security headers).
   * `machine`: a server calls it (webhook deliveries, health probes): no browser
   * session is loaded and no document headers are set, since no browser renders it.
   */
  audience: 'browser' | 'machine';
  /** The span the route runs in (`store_app.install.begin`, …), when it has one. */
  span?: string;
  handler: CoreHandler;
}

/** A request's kit route: its handler when the method is allowed, else its 405. */
export interface RouteMatch {
  route: KitRoute;
  /** False: the path is a kit route's, the method is not one it serves (405). */
  allowed: boolean;
}

export { routeKey };

/** Whether `route` serves `method` (HEAD through GET). */
function serves(route: KitRoute, method: string): boolean {
  return route.methods.includes(method) || (method === 'HEAD' && route.methods.includes('GET'));
}

/** The `Allow` header of a route: its methods, HEAD beside GET. */
export function allowOf(route: KitRoute): string {
  const methods = [...route.methods];
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods.join(', ');
}

/**
 * The matcher of a route table: `match(method, path)` for a path relative to the
 * app URL's path. Undefined: not a kit path (the app's route).
 */
export function createRouteMatcher(routes: readonly KitRoute[]) {
  const byKey = new Map<string, KitRoute>();
  for (const r of routes) {
    const key = routeKey(r.path);
    if (byKey.has(key)) throw new Error(`Two kit routes share the path ${r.path}`);
    byKey.set(key, r);
  }
  const firsts = [...new Set([...byKey.keys()].map(firstSegment))];
  // A kit path outside ASCII: every request goes to the map (lower-casing such a path may
  // change its length, which the first-segment test compares).
  const gated = firsts.every((f) => [...f].every((c) => c.charCodeAt(0) < 0x80));
  /**
   * `method` is read only for a kit path: upper-cased there (`request.method` of a Fetch
   * runtime may be any case; Node's is upper case already).
   */
  return function match(method: string, path: string): RouteMatch | undefined {
    // Most requests of an app are not the kit's: told apart by their first segment alone,
    // without a new string or a map look-up.
    if (gated && !mayBeKitPath(path, firsts)) return undefined;
    // The common spelling first: no new string for most requests of the app.
    const route = byKey.get(path) ?? byKey.get(routeKey(path));
    return route === undefined
      ? undefined
      : { route, allowed: serves(route, method.toUpperCase()) };
  };
}

/** The first segment of a route key (`auth` of `/auth/callback`; `''` of `/`). */
function firstSegment(key: string): string {
  const slash = key.indexOf('/', 1);
  return key.slice(1, slash === -1 ? key.length : slash);
}

/**
 * False only when `path` cannot match a key whose first segments are `firsts` (lower
 * case, ASCII): its first segment, compared as `routeKey` lower-cases, is none of them.
 * A character outside ASCII (which `toLowerCase` may fold to ASCII: the Kelvin sign) or
 * a path not starting with `/` leaves the decision to the map.
 */
function mayBeKitPath(path: string, firsts: readonly string[]): boolean {
  if (path.charCodeAt(0) !== 0x2f) return true;
  const slash = path.indexOf('/', 1);
  const length = (slash === -1 ? path.length : slash) - 1;
  next: for (const first of firsts) {
    if (first.length !== length) continue;
    for (let i = 0; i < length; i++) {
      let c = path.charCodeAt(i + 1);
      if (c >= 0x41 && c <= 0x5a) c += 0x20;
      else if (c >= 0x80) return true;
      if (c !== first.charCodeAt(i)) continue next;
    }
    return true;
  }
  return false;
}

/** 405 for a kit path hit with a method it does not serve. */
export function methodNotAllowed(route: KitRoute, method: string): CoreResponse {
  recordError(route.id === 'webhooks' ? 'webhook' : 'request', 'METHOD_NOT_ALLOWED');
  return {
    status: 405,
    headers: { allow: allowOf(route), 'cache-control': 'no-store' },
    cookies: [],
    body: {
      kind: 'json',
      value: {
        code: 'METHOD_NOT_ALLOWED',
        message: `${route.path} answers ${allowOf(route)}, not ${method}.`,
      },
    },
  };
}

/**
 * The handler a shell runs for a match: the route's handler (or its 405) inside the
 * route's span, every answer `nosniff`, every 401 carrying its challenge. One wrapper
 * for both shells.
 */
export function routeRunner(match: RouteMatch): CoreHandler {
  const { route } = match;
  const run: CoreHandler = match.allowed
    ? route.handler
    : async (req) => methodNotAllowed(route, req.method);
  return async function kitRoute(req: CoreRequest) {
    const r = await (route.span === undefined
      ? run(req)
      : traceHandler(route.span, req.method, () => run(req)));
    // Nothing the kit answers is meant to be sniffed into another type (machine
    // routes included: they get no other document header).
    r.headers['x-content-type-options'] ??= 'nosniff';
    return withChallenge(r, req);
  };
}

/**
 * The route table as the shells run it: each route's handler wrapped once (span,
 * challenge), matched by the one rule. `run(match)` is the handler to call.
 */
export function createKitRoutes(routes: readonly KitRoute[]) {
  const match = createRouteMatcher(routes);
  const runners = new Map<KitRoute, CoreHandler>();
  const refusals = new Map<KitRoute, CoreHandler>();
  for (const r of routes) {
    runners.set(r, routeRunner({ route: r, allowed: true }));
    refusals.set(r, routeRunner({ route: r, allowed: false }));
  }
  return {
    routes,
    match,
    /** The wrapped handler of a match. */
    run(m: RouteMatch): CoreHandler {
      return (m.allowed ? runners : refusals).get(m.route)!;
    },
  };
}

export type KitRoutes = ReturnType<typeof createKitRoutes>;
