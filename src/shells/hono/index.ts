/**
 * The kit on Hono: `middleware()` (the kit's routes, and its header set on every other
 * answer) and `authenticated()` (the store in `c.get('store')`), over the Fetch shell's
 * own pieces: the same route table, `authenticate`, in-memory fast path and header set
 * as `kit.fetch`, `kit.authenticate` and `kit.secureResponse`. `fetch(app)` and
 * `authenticated(handler)` are the same two steps without a middleware: Hono runs a
 * route that has any middleware through its async `compose` (a promise and a microtask
 * per answer, ~4 µs on Node), and a route with one handler synchronously.
 *
 * Why a mount of its own: on Node, `@hono/node-server` writes a Response built from a
 * plain header object straight to the socket, but any `Headers` object (reading
 * `c.res.headers`, `c.header()`) sends it down a slower path, and reading
 * `c.req.raw.headers` builds a `Headers` from the socket's. Served by
 * `@hono/node-server` (`c.env.outgoing` is the Node response), this mount reads the
 * `Authorization` header from the Node request and sets the header set on the Node
 * response before the route runs, where Node merges it under the route's own headers
 * (a header the route sets wins, as with `kit.secureResponse`); `Vary: Authorization`
 * is kept in a `Vary` the route sets, and the headers the set removes are removed, when
 * the head is written. On any other server (Bun, Deno, Workers) it adds the set after
 * the route as `kit.secureResponse` does.
 *
 * Hono is an optional peer: this file imports its types only.
 */
import type { Handler, MiddlewareHandler } from 'hono';
import type { AuthenticatedStore } from '../../authenticated/index.js';
import { isBearerRequest } from '../../core/bearer.js';
import { type HeaderSet, varyWith } from '../../core/security-headers.js';
import type { FetchShell } from '../fetch/index.js';

/** `c.get('store')` behind `authenticated()`: `new Hono<StoreAppHonoEnv>()` types it. */
export interface StoreAppHonoEnv {
  Variables: { store: AuthenticatedStore };
}

export interface StoreAppHonoOptions {
  /**
   * The client's address as your server trusts it (it keys the install callback's
   * per-source limit). Default: the socket's address on `@hono/node-server`
   * (`c.env.incoming.socket.remoteAddress`), else none. Behind a reverse proxy,
   * return the address your trusted proxy reports.
   */
  remoteAddress?: (request: Request, env: unknown) => string | undefined;
}

/** A Fetch handler as Hono's `app.fetch` is one: `(request, env, executionCtx)`. */
// biome-ignore lint/suspicious/noExplicitAny: Hono's own signature (env and ctx are the runtime's).
export type FetchHandler = (request: Request, env?: any, ctx?: any) => Response | Promise<Response>;

export interface StoreAppHono {
  /**
   * Mount once, first: `app.use('*', hono.middleware())`. Or, instead of it, serve
   * `hono.fetch(app)`.
   */
  middleware(): MiddlewareHandler;
  /**
   * The route's store in `c.get('store')`, or the kit's answer instead (a launch's
   * redirect, re-authorisation, 401, 403, 503): `kit.authenticate` as a middleware.
   */
  authenticated(): MiddlewareHandler<StoreAppHonoEnv>;
  /**
   * The same around one handler: `app.get(path, hono.authenticated((c) => …))`. The
   * route keeps a single handler, which Hono calls without its async composition.
   */
  authenticated<E extends StoreAppHonoEnv = StoreAppHonoEnv, P extends string = string>(
    handler: Handler<E, P>,
  ): Handler<E, P>;
  /**
   * `middleware()`'s work around the app instead of in it: the kit's routes, and its
   * header set on every other answer. Serve it in place of `app.fetch`
   * (`serve({ fetch: hono.fetch(app) })`, `export default { fetch: hono.fetch(app) }`) and
   * mount no `middleware()`: the app's routes stay free of middleware.
   */
  fetch(app: { fetch: FetchHandler } | FetchHandler): FetchHandler;
}

/** What this mount reads of `@hono/node-server`'s bindings (`HttpBindings`). */
interface NodeBindings {
  incoming?: {
    rawHeaders: string[];
    socket?: { remoteAddress?: string };
  };
  outgoing?: NodeOutgoing;
}
interface NodeOutgoing {
  headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  removeHeader(name: string): void;
  writeHead: (status: number, ...rest: unknown[]) => unknown;
}

const nodeOf = (env: unknown): NodeBindings | undefined =>
  typeof env === 'object' && env !== null && 'outgoing' in env ? (env as NodeBindings) : undefined;

/**
 * The request's `Authorization`, from the Node request when there is one (no `Headers`
 * built): its raw lines, joined as a `Headers` joins them (Node's `headers` object keeps
 * only the first of two, which the Fetch mount would not).
 */
function authorizationOf(request: Request, node: NodeBindings | undefined): string | undefined {
  const raw = node?.incoming?.rawHeaders;
  if (raw === undefined) return request.headers.get('authorization') ?? undefined;
  let value: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      value = value === undefined ? raw[i + 1] : `${value}, ${raw[i + 1]}`;
    }
  }
  return value;
}

/**
 * The Node response's `writeHead` for a route under `set`: the route's own head (its
 * headers win over the set's, as with `kit.secureResponse`) with the set's headers it
 * does not name added, `Authorization` kept in its `Vary` (a bearer answer) and the
 * set's removed headers dropped. `@hono/node-server` calls it with `(status, headers)`,
 * `headers` a plain object: merged here into a new one (the route's may be a constant
 * of its own), Node writes it on its fast path (no `setHeader`, no `Headers`).
 */
function headWriter(set: HeaderSet, bearer: boolean) {
  const entries = bearer ? set.bearer : set.document;
  const names = new Set<string>([...entries.map(([name]) => name), ...set.removed, 'vary']);
  // The lengths of those names: a header of the route's of another length is none of them,
  // told without lower-casing it (a new string per header per answer).
  const lengths = new Set([...names].map((name) => name.length));
  return function writeHeadWithSet(
    this: NodeOutgoing,
    status: number,
    reason?: unknown,
    own?: unknown,
  ): unknown {
    const head = typeof reason === 'string' ? own : reason;
    const write = (Object.getPrototypeOf(this) as NodeOutgoing).writeHead;
    if (Array.isArray(head)) {
      // Raw header lines (not what @hono/node-server passes): the set goes in first, and
      // Node applies the lines over it.
      for (const [name, value] of entries) this.setHeader(name, value);
      if (bearer) this.setHeader('vary', 'Authorization');
      for (const name of set.removed) this.removeHeader(name);
      return typeof reason === 'string'
        ? write.call(this, status, reason, head)
        : write.call(this, status, head);
    }
    const merged: Record<string, unknown> = {};
    /** The set's names the route's head has (lower case), when it has any. */
    let named: Set<string> | undefined;
    if (typeof head === 'object' && head !== null) {
      for (const key in head) {
        const lower = lengths.has(key.length) ? key.toLowerCase() : undefined;
        if (lower !== undefined && names.has(lower)) {
          if (set.removed.includes(lower)) continue;
          named ??= new Set();
          named.add(lower);
        }
        merged[key] = (head as Record<string, unknown>)[key];
      }
    }
    for (const [name, value] of entries) if (named?.has(name) !== true) merged[name] = value;
    if (bearer) {
      if (named?.has('vary') === true) {
        for (const key in merged) {
          if (key.toLowerCase() === 'vary')
            merged[key] = varyWith(String(merged[key]), 'Authorization');
        }
      } else merged.vary = 'Authorization';
    }
    return typeof reason === 'string'
      ? write.call(this, status, reason, merged)
      : write.call(this, status, merged);
  };
}

/** The Hono mount over a kit's Fetch shell. */
export function createHonoMount(
  shell: FetchShell,
  options: StoreAppHonoOptions = {},
): StoreAppHono {
  const addressOf =
    options.remoteAddress ??
    ((_request: Request, env: unknown) => nodeOf(env)?.incoming?.socket?.remoteAddress);

  // Built once per kit: the two heads a route's answer can get.
  const set = shell.headerSet;
  const writers = set && { bearer: headWriter(set, true), document: headWriter(set, false) };

  /** What comes of a request before the app's routes (see `enter`). */
  const PASS = 0;
  const SECURE_AFTER = 1;

  // The socket's address is read only for the kit's routes (no closure per request).
  const routeOptions = (request: Request, env: unknown) => ({
    remoteAddress: addressOf(request, env),
  });

  /**
   * The last request whose `Authorization` `enter` read, and that value: `guard` runs
   * for the same request right after (Hono dispatches synchronously up to the route's
   * handler) and takes it from here rather than reading the header lines again.
   * Compared by identity, and dropped once read (a request whose route has no
   * `authenticated()` is held only until the next one enters).
   */
  let readFor: Request | undefined;
  let readValue: string | undefined;
  function authorizationFor(request: Request, env: unknown): string | undefined {
    if (readFor === request) {
      readFor = undefined;
      return readValue;
    }
    return authorizationOf(request, nodeOf(env));
  }

  /**
   * The kit's answer for its own routes; otherwise the header set armed on Node's
   * response (PASS), or SECURE_AFTER where the set must be added to the app's answer
   * (no Node response: Bun, Deno, Workers, `app.request`).
   */
  function enter(
    request: Request,
    env: unknown,
  ): Promise<Response> | typeof PASS | typeof SECURE_AFTER {
    const answered = shell.route(request, routeOptions, env);
    if (answered !== null) return answered;
    if (set === undefined || writers === undefined) return PASS;
    const node = nodeOf(env);
    const outgoing = node?.outgoing;
    if (outgoing === undefined || outgoing.headersSent) return SECURE_AFTER;
    // The set goes in as the head is written (see headWriter).
    const authorization = authorizationOf(request, node);
    readFor = request;
    readValue = authorization;
    outgoing.writeHead = isBearerRequest(authorization) ? writers.bearer : writers.document;
    return PASS;
  }

  const middleware: MiddlewareHandler = (c, next) => {
    const request = c.req.raw;
    const entered = enter(request, c.env);
    if (entered === PASS) return next();
    if (entered !== SECURE_AFTER) return entered;
    return next().then(() => {
      const secured = shell.secureResponse(request, c.res);
      // Only a copy is assigned: Hono copies any Response assigned to c.res.
      if (secured !== c.res) c.res = secured;
    });
  };

  const wrap = (app: { fetch: FetchHandler } | FetchHandler): FetchHandler => {
    const appFetch = typeof app === 'function' ? app : app.fetch.bind(app);
    return function fetchWithKit(request, env, ctx) {
      const entered = enter(request, env);
      if (entered === PASS) return appFetch(request, env, ctx);
      if (entered !== SECURE_AFTER) return entered;
      const answer = appFetch(request, env, ctx);
      // A promise or a Response (of whichever class the runtime's Response is).
      return typeof (answer as Promise<Response>).then === 'function'
        ? (answer as Promise<Response>).then((response) => shell.secureResponse(request, response))
        : shell.secureResponse(request, answer as Response);
    };
  };

  /** The store of `c`'s request, put in `c.get('store')`, then `then`; or the kit's answer. */
  function guard<E extends StoreAppHonoEnv, P extends string>(
    then: Handler<E, P> | MiddlewareHandler<E, P>,
  ): Handler<E, P> {
    return (c, next) => {
      const known = shell.fromMemory(authorizationFor(c.req.raw, c.env));
      if (known !== undefined) {
        c.set('store', known);
        return then(c, next);
      }
      return shell
        .authenticate(c.req.raw, { remoteAddress: addressOf(c.req.raw, c.env) })
        .then((store) => {
          if (store instanceof Response) return store;
          c.set('store', store);
          return then(c, next);
        }) as ReturnType<Handler<E, P>>;
    };
  }

  /** The middleware form: the route's next handler runs after the store is set. */
  const authenticated = guard<StoreAppHonoEnv, string>((_c, next) =>
    next(),
  ) as MiddlewareHandler<StoreAppHonoEnv>;

  return {
    middleware: () => middleware,
    authenticated: ((handler?: Handler<StoreAppHonoEnv>) =>
      handler === undefined ? authenticated : guard(handler)) as StoreAppHono['authenticated'],
    fetch: wrap,
  };
}
