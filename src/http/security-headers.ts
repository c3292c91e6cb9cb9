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
  return function storeAppSecurityHeaders(req, res, next) {
    handler(req, res, next);
  };
}
