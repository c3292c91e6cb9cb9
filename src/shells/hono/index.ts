/**
 * The kit on Hono: `middleware()` (the kit's routes, and its header set on every other
 * answer) and `authenticated()` (the store in `c.get('store')`), over the Fetch shell's
 * own pieces: the same route table, `authenticate`, in-memory fast path and header set
 * as `kit.fetch`, `kit.authenticate` and `kit.secureResponse`.
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
import type { MiddlewareHandler } from 'hono';
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

export interface StoreAppHono {
  /** Mount once, first: `app.use('*', hono.middleware())`. */
  middleware(): MiddlewareHandler;
  /**
   * The route's store in `c.get('store')`, or the kit's answer instead (a launch's
   * redirect, re-authorisation, 401, 403, 503): `kit.authenticate` as a middleware.
   */
  authenticated(): MiddlewareHandler<StoreAppHonoEnv>;
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
        const lower = key.toLowerCase();
        if (names.has(lower)) {
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

  const middleware: MiddlewareHandler = (c, next) => {
    const request = c.req.raw;
    // The socket's address is read only for the kit's routes.
    const answered = shell.route(request, () => ({ remoteAddress: addressOf(request, c.env) }));
    if (answered !== null) return answered;
    if (set === undefined || writers === undefined) return next();
    const node = nodeOf(c.env);
    const outgoing = node?.outgoing;
    if (outgoing !== undefined && !outgoing.headersSent) {
      // The set goes in as the head is written (see headWriter).
      const bearer = isBearerRequest(authorizationOf(request, node));
      outgoing.writeHead = bearer ? writers.bearer : writers.document;
      return next();
    }
    return next().then(() => {
      const secured = shell.secureResponse(request, c.res);
      // Only a copy is assigned: Hono copies any Response assigned to c.res.
      if (secured !== c.res) c.res = secured;
    });
  };

  const authenticated: MiddlewareHandler<StoreAppHonoEnv> = (c, next) => {
    const known = shell.fromMemory(authorizationOf(c.req.raw, nodeOf(c.env)));
    if (known !== undefined) {
      c.set('store', known);
      return next();
    }
    return shell
      .authenticate(c.req.raw, { remoteAddress: addressOf(c.req.raw, c.env) })
      .then((store): Promise<Response | undefined> | Response => {
        if (store instanceof Response) return store;
        c.set('store', store);
        return next().then(() => undefined);
      });
  };

  return { middleware: () => middleware, authenticated: () => authenticated };
}
