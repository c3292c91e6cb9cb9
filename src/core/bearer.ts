/**
 * The `Authorization: Bearer` rules, in one place for both shells and every
 * layer that treats bearer requests apart (session, security headers, page
 * navigation, `authenticated()`, the health token).
 */

/** The token of an `Authorization: Bearer <token>` header. */
export const BEARER_TOKEN = /^Bearer\s+(\S+)\s*$/i;

const BEARER = /^bearer\s/i;

/** Whether a request names a bearer token (script-made: browsers never attach one to a navigation). */
export function isBearerRequest(authorization: string | undefined): boolean {
  return authorization !== undefined && BEARER.test(authorization);
}

/**
 * Any spelling of the Bearer scheme, an empty one included (answered as a
 * malformed token); other schemes (a staging proxy's Basic auth) are not ours.
 */
export function isBearerScheme(authorization: string | undefined): boolean {
  return authorization !== undefined && /^bearer(\s|$)/i.test(authorization);
}

/**
 * What follows `Bearer ` in the spelling every client of the kit sends, as it stands
 * (not checked against the rule), or undefined for any other spelling. Enough for a
 * look-up among tokens verified before: only an exact, verified token matches.
 */
export function sentBearer(authorization: string): string | undefined {
  return authorization.startsWith('Bearer ') ? authorization.slice(7) : undefined;
}

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined. The
 * spelling every client of the kit sends is read without a regex match object;
 * any other spelling takes the rule itself.
 */
export function bearerToken(authorization: string): string | undefined {
  const token = sentBearer(authorization);
  // One token, no whitespace around or inside: else the rule decides (and refuses).
  if (token !== undefined && token.length > 0 && !/\s/.test(token)) return token;
  return BEARER_TOKEN.exec(authorization)?.[1];
}
