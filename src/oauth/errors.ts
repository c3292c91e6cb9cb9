import { type ErrorContext, StoreAppError } from '../errors/index.js';

/** The platform could not be reached, timed out, or answered 5xx / 429. Retry later. */
export const TOKEN_ENDPOINT_UNAVAILABLE = 'TOKEN_ENDPOINT_UNAVAILABLE' as const;
/** The platform answered something that is not a valid token or error response. */
export const TOKEN_RESPONSE_INVALID = 'TOKEN_RESPONSE_INVALID' as const;

/** RFC 6749 §5.2 error codes the platform answers with (plus any other it may send). */
export const INVALID_GRANT = 'invalid_grant' as const;
export const INVALID_CLIENT = 'invalid_client' as const;
export const INVALID_SCOPE = 'invalid_scope' as const;
export const INVALID_REQUEST = 'invalid_request' as const;
export const UNSUPPORTED_GRANT_TYPE = 'unsupported_grant_type' as const;
export const ACCESS_DENIED = 'access_denied' as const;

export type OAuthErrorCode =
  | typeof TOKEN_ENDPOINT_UNAVAILABLE
  | typeof TOKEN_RESPONSE_INVALID
  | typeof INVALID_GRANT
  | typeof INVALID_CLIENT
  | typeof INVALID_SCOPE
  | typeof INVALID_REQUEST
  | typeof UNSUPPORTED_GRANT_TYPE
  | typeof ACCESS_DENIED
  // Any other RFC 6749 error string the platform may send; kept as-is so callers can log it.
  | (string & {});

export interface OAuthErrorContext extends ErrorContext {
  retryable?: boolean;
  /** How long the platform asked us to wait (its 429's or 503's Retry-After), in ms. */
  retryAfterMs?: number;
}

/**
 * A failed call to the platform's token endpoint. `code` is the RFC 6749 error
 * (`invalid_grant`, `invalid_client`, …) when the platform sent one, or
 * `TOKEN_ENDPOINT_UNAVAILABLE` / `TOKEN_RESPONSE_INVALID`. The message never
 * holds the request or response body.
 */
export class OAuthError extends StoreAppError<OAuthErrorCode> {
  /** True when the same request may succeed later (network error, timeout, 5xx, 429). */
  readonly retryable: boolean;
  /** The platform's Retry-After in ms, when it sent one: wait this long before calling again. */
  readonly retryAfterMs: number | undefined;
  constructor(code: OAuthErrorCode, message: string, context: OAuthErrorContext = {}) {
    const { retryAfterMs, ...rest } = context;
    super(code, message, rest);
    this.retryable = context.retryable ?? false;
    this.retryAfterMs = retryAfterMs;
  }
}
