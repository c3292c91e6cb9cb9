/**
 * helmet, set up for an app framed by the merchant admin: CSP
 * `frame-ancestors` names only the admin origin and no `X-Frame-Options`
 * (which cannot allow one origin) when embedded; `frame-ancestors 'none'`
 * and `X-Frame-Options: DENY` otherwise.
 *
 * No helmet option can take the framing protection away: with the CSP turned
 * off or made report-only (which browsers do not enforce, and which ignores
 * `frame-ancestors` anyway), an enforced `Content-Security-Policy` carrying
 * only `frame-ancestors` is still sent. Only `framing: 'unprotected'` drops
 * it, and the kit logs a warning at start when it does.
 *
 * A request carrying `Authorization: Bearer` gets only the headers that still
 * protect a response read by script (see `BEARER_KEPT`), plus
 * `Vary: Authorization`: browsers attach a bearer token only to requests their
 * scripts make, never to a navigation, a frame or a subresource load, so the
 * document headers (CSP, framing, COOP, ...) guard nothing there
 * (docs/security.md, "Security headers on bearer responses").
 */
import type { NextFunction, RequestHandler, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';
import { isBearerRequest } from '../core/bearer.js';
import type { ResolvedHttpOptions } from './options.js';

/**
 * What a bearer response keeps: nosniff (a script's fetch still honours it for
 * its destination) and HSTS (any HTTPS response sets it, fetched or not).
 */
const BEARER_KEPT: ReadonlySet<string> = new Set([
  'x-content-type-options',
  'strict-transport-security',
]);

export function frameAncestors(embedded: ResolvedHttpOptions['embedded']): string[] {
  return embedded.enabled ? [embedded.adminOrigin] : ["'none'"];
}

/**
 * Why the app can be framed by any site under these options, or null when it
 * cannot. The kit logs it as a warning at start.
 */
export function framingWarning(
  enabled: boolean,
  options: Pick<ResolvedHttpOptions['securityHeaders'], 'framing'>,
): string | null {
  if (!enabled) {
    return 'securityHeaders.enabled is false: no frame-ancestors and no X-Frame-Options are sent, so any site can frame the app (clickjacking). Set your own framing headers.';
  }
  if (options.framing === 'unprotected') {
    return "securityHeaders.framing is 'unprotected': no frame-ancestors and no X-Frame-Options are sent, so any site can frame the app (clickjacking).";
  }
  return null;
}

export function securityHeaders(
  embedded: ResolvedHttpOptions['embedded'],
  options: {
    helmet: HelmetOptions;
    enabled?: boolean;
    /** @default 'protected' */
    framing?: ResolvedHttpOptions['securityHeaders']['framing'];
  },
  /** Whether the app is served over HTTPS (its URL). @default true */
  https = true,
): RequestHandler {
  const extra: HelmetOptions = options.helmet;
  const protectFraming = options.framing !== 'unprotected';
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
              // On a plain-HTTP development URL, helmet's default would make
              // browsers rewrite the app's own http:// assets to https:// and fail.
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
  // A CSP computed per request (nonces) is a document header: bearer responses
  // take the rest of helmet's output, which is the same every time.
  const noCsp: HelmetOptions = { ...config, contentSecurityPolicy: false };
  const { set: bearerFrom, removed: bearerRemoved } = fixed ??
    staticHeaders(helmet(noCsp), noCsp) ?? { set: [], removed: [] };
  const bearerSet = bearerFrom.filter(([name]) => BEARER_KEPT.has(name));
  function bearerHeaders(res: Response, next: NextFunction): void {
    for (const [name, value] of bearerSet) res.setHeader(name, value);
    for (const name of bearerRemoved) res.removeHeader(name);
    // A cached bearer response must never answer a navigation (which lacks the header)
    // with these fewer headers.
    // (Set outright when the app set no Vary before: res.vary parses and joins.)
    if (res.getHeader('vary') === undefined) res.setHeader('vary', 'Authorization');
    else res.vary('Authorization');
    next();
  }
  if (fixed === undefined) {
    return function storeAppSecurityHeaders(req, res, next) {
      if (isBearerRequest(req.headers.authorization)) return bearerHeaders(res, next);
      if (framingOnly) res.setHeader('Content-Security-Policy', framingOnly);
      handler(req, res, next);
    };
  }
  const { set, removed } = fixed;
  // helmet's thirteen middlewares set the same values on every response: set
  // what it set once, in one loop (a tenth of a small API response's time).
  return function storeAppSecurityHeaders(req, res, next) {
    if (isBearerRequest(req.headers.authorization)) return bearerHeaders(res, next);
    if (framingOnly) res.setHeader('Content-Security-Policy', framingOnly);
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
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

/**
 * What helmet sets and removes, captured from one run against a recording
 * response; undefined when a CSP directive is a function (nonces: per request).
 */
function staticHeaders(
  handler: RequestHandler,
  config: HelmetOptions,
): { set: Array<[string, string | number | readonly string[]]>; removed: string[] } | undefined {
  const csp = config.contentSecurityPolicy;
  if (typeof csp === 'object' && csp !== null) {
    for (const value of Object.values(csp.directives ?? {})) {
      const values = Array.isArray(value) ? value : [value];
      if (values.some((v) => typeof v === 'function')) return undefined;
    }
  }
  const set: Array<[string, string | number | readonly string[]]> = [];
  const removed: string[] = [];
  let error: unknown;
  let done = false;
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      // Lower case, as Node keys them: setHeader then lower-cases without making a
      // new string per header per response (header names are case-insensitive).
      set.push([name.toLowerCase(), value]);
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  handler({} as never, recorder as never, (err?: unknown) => {
    error = err;
    done = true;
  });
  // helmet answers synchronously; anything else is kept per request, as it was.
  return done && error === undefined ? { set, removed } : undefined;
}

/**
 * The frame-ancestors a kit page carries in its own CSP: what the security
 * headers would send, or undefined when the app sends its own (none from us).
 */
export function pageFrameAncestors(config: {
  embedded: ResolvedHttpOptions['embedded'];
  securityHeaders: Pick<ResolvedHttpOptions['securityHeaders'], 'enabled' | 'framing'>;
}): string[] | undefined {
  if (!config.securityHeaders.enabled || config.securityHeaders.framing === 'unprotected') {
    return undefined;
  }
  return frameAncestors(config.embedded);
}
