/**
 * The error codes and class of `kit.authenticated()` and its tokens, apart
 * from the code that verifies them (jose), so the main entry can export them
 * without loading it.
 */
import { StoreAppError } from '../errors/index.js';

/** No session and no app session token: the merchant has to open the app from the admin. */
export const SESSION_REQUIRED = 'SESSION_REQUIRED' as const;
/** The app now needs scopes the installation was not granted: the merchant re-authorises. */
export const SCOPES_CHANGED = 'SCOPES_CHANGED' as const;

/**
 * A write (POST, PUT, PATCH, DELETE…) authenticated only by the session cookie came from
 * another site (`Sec-Fetch-Site: cross-site`, or a foreign `Origin`): refused as a forged
 * request. Same-origin pages, and any caller sending the app session token, are unaffected.
 */
export const CROSS_SITE_REQUEST = 'CROSS_SITE_REQUEST' as const;

export const SESSION_TOKEN_INVALID = 'SESSION_TOKEN_INVALID' as const;
export const SESSION_TOKEN_EXPIRED = 'SESSION_TOKEN_EXPIRED' as const;
export const LAUNCH_TOKEN_INVALID = 'LAUNCH_TOKEN_INVALID' as const;
/** The session behind the token is older than its absolute lifetime: open the app from the admin again. */
export const SESSION_LIFETIME_EXCEEDED = 'SESSION_LIFETIME_EXCEEDED' as const;

export type SessionTokenErrorCode =
  | typeof SESSION_TOKEN_INVALID
  | typeof SESSION_TOKEN_EXPIRED
  | typeof SESSION_LIFETIME_EXCEEDED
  | typeof LAUNCH_TOKEN_INVALID;

/** A bearer or launch token was refused. The message never contains the token. */
export class SessionTokenError extends StoreAppError<SessionTokenErrorCode> {
  constructor(code: SessionTokenErrorCode, message: string, cause?: unknown) {
    super(code, message, { status: 401, cause });
  }
}

/**
 * A `SessionTokenError` for a token a client sent, built without a stack trace: the
 * cause is the client's input, not a path through our code, and capturing the (async)
 * stack cost ~8 µs of CPU per refused token — more than the HMAC that refused it — in a
 * flood of junk bearer tokens.
 */
export function tokenRefusal(
  code: SessionTokenErrorCode,
  message: string,
  cause?: unknown,
): SessionTokenError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new SessionTokenError(code, message, cause);
  } finally {
    Error.stackTraceLimit = limit;
  }
}
