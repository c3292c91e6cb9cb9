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

/** Per-request state behind `res.locals.log` (one object, no closures per request). */
interface RequestLogState {
  root: Logger;
  method: string;
  /** `req.url` as the request arrived (mounted routers rewrite it later); parsed on first use. */
  url: string;
  headerId: string | string[] | undefined;
  log: Logger | undefined;
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

const REQUEST_LOG = Symbol('store-app-kit.requestLog');
type LocalsWithLog = Record<PropertyKey, unknown> & { [REQUEST_LOG]?: RequestLogState };

function requestLog(state: RequestLogState): Logger {
  if (state.log === undefined) {
    const { headerId } = state;
    const reqId =
      typeof headerId === 'string' && /^[\w.-]{1,64}$/.test(headerId) ? headerId : randomUUID();
    state.log = state.root.child({ reqId, method: state.method, path: pathOf(state.url) });
  }
  return state.log;
}

/**
 * The `log` accessor of every request's `res.locals`: one descriptor for all
 * requests, reading the request's state from the object it is read on. A
 * descriptor and two closures per request made the request logger the
 * costliest piece of `kit.middleware()` (issue 24: ~18 µs of CPU per request
 * at 50 connections, most of it garbage collection).
 */
const LOG_ACCESSOR: PropertyDescriptor = {
  get(this: LocalsWithLog) {
    const state = this[REQUEST_LOG];
    return state === undefined ? undefined : requestLog(state);
  },
  set(this: LocalsWithLog, value: Logger | undefined) {
    const state = this[REQUEST_LOG];
    if (state !== undefined) state.log = value;
  },
  enumerable: true,
  configurable: true,
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
    const locals = res.locals as LocalsWithLog;
    if (Object.hasOwn(locals, 'log')) return;
    const state: RequestLogState = {
      root,
      method: req.method,
      url: req.url,
      headerId: req.headers['x-request-id'],
      log: undefined,
    };
    locals[REQUEST_LOG] = state;
    Object.defineProperty(locals, 'log', LOG_ACCESSOR);
    if (root.isLevelEnabled('debug')) {
      const started = process.hrtime.bigint();
      res.on('finish', () => {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        requestLog(state).debug(
          { status: res.statusCode, ms: Math.round(ms * 10) / 10 },
          'request done',
        );
      });
    }
  };
}
