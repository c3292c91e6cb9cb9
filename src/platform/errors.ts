import { StoreAppError } from '../errors/index.js';

export const PLATFORM_INVALID_OPTIONS = 'PLATFORM_INVALID_OPTIONS' as const;
export const PLATFORM_INVALID_APP = 'PLATFORM_INVALID_APP' as const;
export const PLATFORM_APP_EXISTS = 'PLATFORM_APP_EXISTS' as const;
export const PLATFORM_UNKNOWN_APP = 'PLATFORM_UNKNOWN_APP' as const;
export const PLATFORM_UNKNOWN_STORE = 'PLATFORM_UNKNOWN_STORE' as const;
export const PLATFORM_NOT_INSTALLED = 'PLATFORM_NOT_INSTALLED' as const;
export const PLATFORM_INVALID_AUTHORIZE = 'PLATFORM_INVALID_AUTHORIZE' as const;
export const PLATFORM_TIMEOUT = 'PLATFORM_TIMEOUT' as const;

export type PlatformErrorCode =
  | typeof PLATFORM_INVALID_OPTIONS
  | typeof PLATFORM_INVALID_APP
  | typeof PLATFORM_APP_EXISTS
  | typeof PLATFORM_UNKNOWN_APP
  | typeof PLATFORM_UNKNOWN_STORE
  | typeof PLATFORM_NOT_INSTALLED
  | typeof PLATFORM_INVALID_AUTHORIZE
  | typeof PLATFORM_TIMEOUT;

/** Thrown by the platform's programmatic control (`startPlatform`, `registerApp`, …). */
export class PlatformError extends StoreAppError<PlatformErrorCode> {}

/**
 * `approveInstall`/`denyInstall` were given an authorize URL the platform would
 * refuse. `oauthError` is what GET /oauth/authorize would report
 * (`invalid_request`, `invalid_scope`, `unsupported_response_type`, or
 * `invalid_client` / `invalid_redirect_uri` for requests answered with an error
 * page); `redirectUrl` is where the merchant would be sent, when the error is
 * redirected rather than shown.
 */
export class AuthorizeRequestError extends StoreAppError<typeof PLATFORM_INVALID_AUTHORIZE> {
  readonly oauthError: string;
  readonly redirectUrl: string | undefined;
  constructor(oauthError: string, message: string, redirectUrl?: string) {
    super(PLATFORM_INVALID_AUTHORIZE, message, { status: 400 });
    this.oauthError = oauthError;
    this.redirectUrl = redirectUrl;
  }
}
