/**
 * helmet, set up for an app framed by the merchant admin: CSP
 * `frame-ancestors` names only the admin origin and no `X-Frame-Options`
 * (which cannot allow one origin) when embedded; `frame-ancestors 'none'`
 * and `X-Frame-Options: DENY` otherwise.
 */
import type { RequestHandler } from 'express';
import helmet, { type HelmetOptions } from 'helmet';
import type { ResolvedHttpOptions } from './options.js';

export function frameAncestors(embedded: ResolvedHttpOptions['embedded']): string[] {
  return embedded.enabled ? [embedded.adminOrigin] : ["'none'"];
}

export function securityHeaders(
  embedded: ResolvedHttpOptions['embedded'],
  options: ResolvedHttpOptions['securityHeaders'],
  /** Whether the app is served over HTTPS (its URL). @default true */
  https = true,
): RequestHandler {
  const extra: HelmetOptions = options.helmet;
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
              ...extraCsp.directives,
              // Always ours: widening it would let any site frame the app.
              frameAncestors: frameAncestors(embedded),
            },
          },
    // X-Frame-Options has no "allow this origin": when embedded it must be absent.
    xFrameOptions: embedded.enabled ? false : { action: 'deny' },
  } as HelmetOptions;
  const handler = helmet(config);
  const fixed = staticHeaders(handler, config);
  if (fixed === undefined) {
    return function storeAppSecurityHeaders(req, res, next) {
      handler(req, res, next);
    };
  }
  const { set, removed } = fixed;
  // helmet's thirteen middlewares set the same values on every response: set
  // what it set once, in one loop (a tenth of a small API response's time).
  return function storeAppSecurityHeaders(_req, res, next) {
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
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
      set.push([name, value]);
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
