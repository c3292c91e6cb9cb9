/**
 * The app's own requests (its pages, its API) need from `kit.middleware()`
 * only its pass-through layers (request logger, launch watch, security headers
 * and session); the kit's routes (install, webhooks, health, session token)
 * live at paths known when the router is built. For any other path those
 * layers run as one function instead of a Router dispatch, whose per-request
 * bookkeeping and garbage was a measurable share of an API call (issue 24).
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';

/** A path the Router would match only as written: no parameters, wildcards or groups. */
const LITERAL_PATH = /^\/[A-Za-z0-9/_.~-]*$/;

/**
 * Whether a request path may reach one of the kit's routes, or undefined when
 * some route path is not literal (then every request takes the Router).
 * Over-approximates: a prefix match, case-insensitive (as the Router matches),
 * on the raw path; whatever matches takes the Router, which decides as before.
 */
export function kitPathTest(routePaths: readonly string[]): ((url: string) => boolean) | undefined {
  if (!routePaths.every((p) => LITERAL_PATH.test(p))) return undefined;
  const prefixes = [...new Set(routePaths.map((p) => p.replace(/\/+$/, '')))];
  // "/" as a route path would match everything.
  if (prefixes.includes('')) return undefined;
  // One regex, built once (no lower-cased copy of each URL). A URL not starting
  // with "/" (absolute form) is left to the Router, which parses it.
  const kit = new RegExp(
    `^(?:[^/]|${prefixes.map((p) => p.replace(/\./g, '\\.')).join('|')})`,
    'i',
  );
  return function mayBeKitPath(url: string): boolean {
    return kit.test(url);
  };
}

/**
 * `layers` one after the other as one middleware; an error any of them passes
 * or throws goes to `onError`, as it would on the Router they also sit in.
 */
export function inOrder(
  layers: readonly RequestHandler[],
  onError: ErrorRequestHandler,
): RequestHandler {
  return function storeAppLayers(req: Request, res: Response, next: NextFunction): void {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== 'route') {
        // The Router's exit word: leave the kit's layers, no error.
        if (err === 'router') {
          next();
          return;
        }
        try {
          onError(err, req, res, next);
        } catch (thrown) {
          next(thrown);
        }
        return;
      }
      const layer = layers[i++];
      if (layer === undefined) {
        next();
        return;
      }
      try {
        const out: unknown = layer(req, res, step);
        // Express 5 layers forward a rejected promise as an error.
        if (out instanceof Promise) out.catch(step);
      } catch (thrown) {
        step(thrown);
      }
    };
    step();
  };
}

/**
 * `router`, still the Router the kit returns (its type and stack unchanged),
 * that hands a request whose path no kit route can match to `appLayers`
 * instead of dispatching it. Express calls a Router through its own `handle`.
 */
export function withBypass<R extends RequestHandler>(
  router: R,
  mayBeKitPath: (url: string) => boolean,
  appLayers: RequestHandler,
): R {
  const target = router as R & { handle: RequestHandler };
  const dispatch = target.handle;
  target.handle = function storeAppMiddleware(req, res, next) {
    if (mayBeKitPath(req.url)) dispatch.call(target, req, res, next);
    else appLayers(req, res, next);
  };
  return router;
}
