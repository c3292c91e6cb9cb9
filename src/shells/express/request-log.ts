/**
 * The request log of the Express shell: `res.locals.log`, a child of the kit's logger
 * per request (request id, method, path: never the query, which holds codes and
 * state), made on first use.
 */
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';

declare global {
  namespace Express {
    interface Locals {
      /** The request's child logger (request id, method, path). */
      log?: Logger;
    }
  }
}

/**
 * Per-request state behind `res.locals.log` (one object, no closures per request). What
 * the child is made from is private: `util.inspect` of the stand-in shows this object,
 * and the URL as it arrived carries the query (codes, launch tokens).
 */
class RequestLogState {
  readonly #root: Logger;
  readonly #method: string;
  /** `req.url` as the request arrived (mounted routers rewrite it later); parsed on first use. */
  readonly #url: string;
  readonly #headerId: string | string[] | undefined;
  #log: Logger | undefined = undefined;
  /** The logger's methods bound to it, by name (see `LAZY_LOG`). */
  bound: Map<PropertyKey, { of: unknown; fn: unknown }> | undefined = undefined;

  constructor(root: Logger, req: Request) {
    this.#root = root;
    this.#method = req.method;
    this.#url = req.url;
    this.#headerId = req.headers['x-request-id'];
  }

  /** The request's pino child, made on first use. */
  logger(): Logger {
    if (this.#log === undefined) {
      const headerId = this.#headerId;
      const reqId =
        typeof headerId === 'string' && /^[\w.-]{1,64}$/.test(headerId) ? headerId : randomUUID();
      this.#log = this.#root.child({ reqId, method: this.#method, path: pathOf(this.#url) });
    }
    return this.#log;
  }
}

/** The path of a request target, without its query (origin-form or absolute-form). */
function pathOf(url: string): string {
  if (url.startsWith('/')) {
    const q = url.indexOf('?');
    return q === -1 ? url : url.slice(0, q);
  }
  try {
    return new URL(url).pathname;
  } catch {
    return '/';
  }
}

/**
 * `res.locals.log`: a stand-in for the request's logger that makes the pino child when
 * first used, then forwards everything to it (methods bound to it, so `const { info } =
 * res.locals.log` works too). A proxy per request, as a plain data property an app can
 * replace: an accessor defined on each request's `res.locals` (an object Express makes
 * per request) cost 3–4 µs of every request on the route bench (issue 31).
 */
const LAZY_LOG: ProxyHandler<RequestLogState> = {
  get(state, prop) {
    const log = state.logger();
    const value: unknown = Reflect.get(log, prop, log);
    if (typeof value !== 'function') return value;
    // Bound once per name: `log.info === log.info`, as on the logger itself.
    state.bound ??= new Map();
    let bound = state.bound.get(prop);
    if (bound === undefined || bound.of !== value) {
      bound = { of: value, fn: value.bind(log) };
      state.bound.set(prop, bound);
    }
    return bound.fn;
  },
  set: (state, prop, value) => Reflect.set(state.logger(), prop, value),
  has: (state, prop) => Reflect.has(state.logger(), prop),
  deleteProperty: (state, prop) => Reflect.deleteProperty(state.logger(), prop),
  ownKeys: (state) => Reflect.ownKeys(state.logger()),
  getOwnPropertyDescriptor(state, prop) {
    const found = Reflect.getOwnPropertyDescriptor(state.logger(), prop);
    // A proxy may not report a property its target lacks as non-configurable.
    return found === undefined ? undefined : { ...found, configurable: true };
  },
  defineProperty: (state, prop, descriptor) =>
    Reflect.defineProperty(state.logger(), prop, descriptor),
  getPrototypeOf: (state) => Reflect.getPrototypeOf(state.logger()),
};

/**
 * Sets `res.locals.log` to a child logger for this request and logs the
 * response status and duration (at debug). Query strings are never logged.
 * The child (and its request id) is made on first use: most requests log
 * nothing, and a pino child per request was a tenth of a webhook delivery's
 * time. Method and URL are taken now, as the request arrived; the path is
 * cut from the URL only when something logs (no parse on the others).
 */
export function requestLogger(root: Logger) {
  const attach = attachRequestLog(root);
  return function storeAppRequestLogger(req: Request, res: Response, next: NextFunction): void {
    attach(req, res);
    next();
  };
}

/**
 * What `requestLogger` does, without calling `next`: the kit runs it in the
 * same router layer as its other per-request notes (each layer Express
 * dispatches costs every request of the app).
 */
export function attachRequestLog(root: Logger) {
  return function storeAppRequestLog(req: Request, res: Response): void {
    const locals = res.locals;
    if (Object.hasOwn(locals, 'log')) return;
    const state = new RequestLogState(root, req);
    locals.log = new Proxy(state, LAZY_LOG) as unknown as Logger;
    if (root.isLevelEnabled('debug')) {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        state
          .logger()
          .debug({ status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request done');
      });
    }
  };
}
