/**
 * Options of `kit.authenticated()` and the app session token. `storeApp()`
 * composes this schema under `authenticated`.
 */
import * as v from 'valibot';
import { integer, parseOptions } from '../options/index.js';

const HEADER_NAME = /^[A-Za-z0-9-]+$/;

export const authenticatedOptionsSchema = v.strictObject({
  /**
   * Lifetime of an app session token (the HS256 JWT the embedded frontend sends
   * as `Authorization: Bearer`), in seconds.
   * @default 300
   */
  sessionTokenTtlSeconds: v.optional(integer(10, 3600), 300),
  /**
   * Clock tolerance when checking a session token's `exp`/`iat`, in seconds.
   * @default 5
   */
  clockToleranceSeconds: v.optional(integer(0, 60), 5),
  /**
   * App session tokens remembered as verified per process (so an embedded page's
   * requests skip the HMAC check); beyond it the least recently used is
   * forgotten and verified again on its next use. An entry lives at most until
   * its token expires.
   * @default 10000
   */
  rememberedTokens: v.optional(integer(1), 10_000),
  /**
   * Header that tells a fetch/XHR caller where to re-authorise.
   * @default 'X-Store-App-Reauthorize'
   */
  reauthorizeHeader: v.optional(
    v.pipe(
      v.string('must be a valid HTTP header name.'),
      v.regex(HEADER_NAME, 'must be a valid HTTP header name.'),
    ),
    'X-Store-App-Reauthorize',
  ),
});

export type AuthenticatedOptions = v.InferInput<typeof authenticatedOptionsSchema>;
export type ResolvedAuthenticatedOptions = v.InferOutput<typeof authenticatedOptionsSchema>;

/** Validates once and fills every default; throws ConfigError naming the option. */
export function resolveAuthenticatedOptions(
  options: AuthenticatedOptions = {},
  prefix = 'authenticated',
): ResolvedAuthenticatedOptions {
  return parseOptions(authenticatedOptionsSchema, options, { prefix });
}
