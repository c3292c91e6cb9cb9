/**
 * The Express shell's options: `securityHeaders` (helmet's options refine the kit's
 * header set here). Only valibot and the kit's option helpers are loaded; helmet's
 * types are types.
 */
import type { HelmetOptions } from 'helmet';
import * as v from 'valibot';
import { boolean } from '../../options/index.js';

export const securityHeadersOptionsSchema = v.strictObject({
  /**
   * Set the kit's security headers on the kit's browser answers and behind
   * `kit.authenticated()` (where else: `scope`), and on the kit's own answers on the
   * Fetch shell.
   * @default true
   */
  enabled: v.optional(boolean(), true),
  /**
   * Where the Express shell sets them. `'kit'`: the kit's browser routes (`/auth`,
   * its callback, session token, browser module) and every route behind
   * `kit.authenticated()`; the app's other routes keep their own headers (a guest in
   * an existing app). `'app'`: every request passing `kit.middleware()` too (an app
   * whose pages are all the kit's: its static `index.html`, its scripts).
   * @default 'kit'
   */
  scope: v.optional(v.picklist(['kit', 'app'], "must be 'kit' or 'app'."), 'kit'),
  /**
   * `'protected'`: CSP `frame-ancestors` (the admin origin when embedded, else
   * `'none'` plus `X-Frame-Options: DENY`) is always sent, whatever `helmet`
   * says. `'unprotected'`: neither is sent (your proxy sets them); the kit
   * logs a warning at start.
   * @default 'protected'
   */
  framing: v.optional(
    v.picklist(['protected', 'unprotected'], "must be 'protected' or 'unprotected'."),
    'protected',
  ),
  /**
   * Extra helmet options merged over the kit's (the kit's `frame-ancestors` is kept).
   * They refine the set on the Express shell; `kit.secureResponse` and the Fetch
   * shell's answers carry the kit's own set.
   * @default {}
   */
  helmet: v.optional(
    v.custom<HelmetOptions>(
      (x) => typeof x === 'object' && x !== null && !Array.isArray(x),
      'must be an object of helmet options.',
    ),
    () => ({}),
  ),
});

export type SecurityHeadersOptions = v.InferInput<typeof securityHeadersOptionsSchema>;

export interface ResolvedSecurityHeadersOptions {
  enabled: boolean;
  scope: 'kit' | 'app';
  helmet: HelmetOptions;
  framing: 'protected' | 'unprotected';
}
