/**
 * The 401 challenge (RFC 9110 §11.6.1 requires one; RFC 6750 §3 names its form):
 * every 401 the kit sends carries `WWW-Authenticate`. `Bearer` alone when the
 * request presented no credentials; `Bearer error="invalid_token"` when it presented
 * a token or a session that was refused or has expired. Same on both shells.
 */
import { isBearerScheme } from './bearer.js';
import type { CoreRequest, CoreResponse } from './http.js';

/** The challenge of a request that presented no credentials. */
export const CHALLENGE_NONE = 'Bearer';
/** The challenge of a request whose token or session was refused. */
export const CHALLENGE_INVALID = 'Bearer error="invalid_token"';

/**
 * Whether the request presented credentials: an `Authorization: Bearer` header, or
 * a session cookie (`req.session.presented`).
 */
export function presentedCredentials(req: CoreRequest): boolean {
  return isBearerScheme(req.header('authorization')) || req.session.presented;
}

/** `r` with its challenge when it is a 401 without one (a challenge already set is kept). */
export function withChallenge(r: CoreResponse, req: CoreRequest): CoreResponse {
  if (r.status === 401 && r.headers['www-authenticate'] === undefined) {
    r.headers['www-authenticate'] = presentedCredentials(req) ? CHALLENGE_INVALID : CHALLENGE_NONE;
  }
  return r;
}
