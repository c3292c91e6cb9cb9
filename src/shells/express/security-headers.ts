/**
 * The kit's security-header set (src/core/security-headers.ts) on Express, as a
 * function applied per route: the kit's request layer applies it to the kit's browser
 * routes (and to every request passing `kit.middleware()` with `securityHeaders.scope:
 * 'app'`), `kit.authenticated()` to what it guards, and it can be applied to a single
 * route.
 *
 * With `securityHeaders.helmet` options the set is helmet's under those options
 * (computed once when static, per request when a CSP directive is a function, e.g.
 * nonces), the kit's framing kept: no helmet option can take `frame-ancestors` away.
 * With the CSP off or report-only (which browsers do not enforce, and which ignores
 * `frame-ancestors` anyway), an enforced `Content-Security-Policy` carrying only
 * `frame-ancestors` is still sent. Only `framing: 'unprotected'` drops it (warned at
 * start).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { HelmetOptions } from 'helmet';
import { isBearerRequest } from '../../core/bearer.js';
import {
  frameAncestors,
  type HeaderEntry,
  type HeaderSet,
  kitHeaderSet,
} from '../../core/security-headers.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { expressFamily } from './family.js';
import type { ResolvedSecurityHeadersOptions } from './options.js';

type Embedded = ResolvedHttpOptions['embedded'];

/** Sets the kit's headers on `res` for `req` (synchronous: nothing to await). */
export type ApplyHeaders = (req: Request, res: Response) => void;

/** Sets `set` on `res`: the document set, or the bearer set with `Vary: Authorization`. */
function applySet(set: HeaderSet, framingOnly: string | null): ApplyHeaders {
  const document = set.document;
  const bearer = set.bearer;
  const removed = set.removed;
  return function storeAppSecurityHeaders(req, res) {
    if (isBearerRequest(req.headers.authorization)) {
      for (const [name, value] of bearer) res.setHeader(name, value);
      for (const name of removed) res.removeHeader(name);
      // A cached bearer response must never answer a navigation (which lacks the header)
      // with these fewer headers. (Set outright when the app set no Vary before:
      // res.vary parses and joins.)
      if (res.getHeader('vary') === undefined) res.setHeader('vary', 'Authorization');
      else res.vary('Authorization');
      return;
    }
    if (framingOnly) res.setHeader('content-security-policy', framingOnly);
    for (const [name, value] of document) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
  };
}

/**
 * The function setting the kit's headers, or undefined when `enabled` is false.
 * `https`: whether the app is served over HTTPS (its URL).
 */
export function headerApplier(
  embedded: Embedded,
  options: Pick<ResolvedSecurityHeadersOptions, 'helmet' | 'framing'> & { enabled?: boolean },
  https = true,
): ApplyHeaders | undefined {
  if (options.enabled === false) return undefined;
  const framing = options.framing ?? 'protected';
  const extra: HelmetOptions = options.helmet ?? {};
  // The kit's own set: no helmet call at all.
  if (Object.keys(extra).length === 0)
    return applySet(kitHeaderSet({ embedded, framing, https }), null);
  return helmetApplier(embedded, extra, framing, https);
}

/** The set under the app's helmet options. */
function helmetApplier(
  embedded: Embedded,
  extra: HelmetOptions,
  framing: 'protected' | 'unprotected',
  https: boolean,
): ApplyHeaders {
  const { helmet } = expressFamily();
  const protectFraming = framing !== 'unprotected';
  const extraCsp =
    typeof extra.contentSecurityPolicy === 'object' ? extra.contentSecurityPolicy : {};
  const config: HelmetOptions = {
    ...extra,
    contentSecurityPolicy:
      extra.contentSecurityPolicy === false
        ? false
        : {
            ...extraCsp,
            directives: {
              ...(https ? {} : { upgradeInsecureRequests: null }),
              ...withoutFrameAncestors(extraCsp.directives),
              // Always ours: widening it would let any site frame the app.
              frameAncestors: protectFraming ? frameAncestors(embedded) : null,
            },
          },
    // X-Frame-Options has no "allow this origin": when embedded it must be absent.
    xFrameOptions: embedded.enabled || !protectFraming ? false : { action: 'deny' },
  } as HelmetOptions;
  const handler = helmet(config);
  // helmet sends no enforced CSP in these two cases; frame-ancestors must still be enforced.
  const cspOff = extra.contentSecurityPolicy === false || extraCsp.reportOnly === true;
  const framingOnly =
    protectFraming && cspOff ? `frame-ancestors ${frameAncestors(embedded).join(' ')}` : null;
  const fixed = staticHeaders(handler, config);
  if (fixed) return applySet(fixed, framingOnly);
  // A CSP computed per request (nonces) is a document header: bearer responses take
  // the rest of helmet's output, which is the same every time.
  const noCsp: HelmetOptions = { ...config, contentSecurityPolicy: false };
  const bearerFrom = staticHeaders(helmet(noCsp), noCsp) ?? {
    document: [],
    bearer: [],
    removed: [],
  };
  const bearerSet = applySet(bearerFrom, null);
  const ignore = () => {};
  return function storeAppSecurityHeaders(req, res) {
    if (isBearerRequest(req.headers.authorization)) return bearerSet(req, res);
    if (framingOnly) res.setHeader('content-security-policy', framingOnly);
    handler(req, res, ignore);
  };
}

/** The app's directives minus any spelling of frame-ancestors (helmet accepts both). */
function withoutFrameAncestors(
  directives: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(directives ?? {})) {
    if (k.replace(/-/g, '').toLowerCase() !== 'frameancestors') out[k] = v;
  }
  return out;
}

const BEARER_KEPT: ReadonlySet<string> = new Set([
  'x-content-type-options',
  'strict-transport-security',
]);

/**
 * What helmet sets and removes, captured from one run against a recording response;
 * undefined when a CSP directive is a function (nonces: per request).
 */
function staticHeaders(
  handler: ReturnType<typeof import('helmet').default>,
  config: HelmetOptions,
): HeaderSet | undefined {
  const csp = config.contentSecurityPolicy;
  if (typeof csp === 'object' && csp !== null) {
    for (const value of Object.values(csp.directives ?? {})) {
      const values = Array.isArray(value) ? value : [value];
      if (values.some((v) => typeof v === 'function')) return undefined;
    }
  }
  const set: HeaderEntry[] = [];
  const removed: string[] = [];
  let error: unknown;
  let done = false;
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      // Lower case, as Node keys them: setHeader then lower-cases without making a
      // new string per header per response.
      set.push([name.toLowerCase(), String(value)]);
    },
    removeHeader(name: string) {
      removed.push(name.toLowerCase());
    },
  };
  handler({} as never, recorder as never, (err?: unknown) => {
    error = err;
    done = true;
  });
  // helmet answers synchronously; anything else is kept per request, as it was.
  if (!done || error !== undefined) return undefined;
  return { document: set, bearer: set.filter(([n]) => BEARER_KEPT.has(n)), removed };
}

/** The kit's headers as a middleware (an app may mount it on routes of its own). */
export function securityHeaders(
  embedded: Embedded,
  options: Pick<ResolvedSecurityHeadersOptions, 'helmet'> & {
    enabled?: boolean;
    framing?: ResolvedSecurityHeadersOptions['framing'];
  },
  https = true,
): RequestHandler {
  const apply = headerApplier(embedded, { framing: 'protected', ...options }, https);
  return function storeAppSecurityHeaders(req: Request, res: Response, next: NextFunction) {
    apply?.(req, res);
    next();
  };
}
