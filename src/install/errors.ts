/** Machine codes of install failures, also sent as the `X-Store-App-Error` header. */
export const INSTALL_ERROR_CODES = {
  /** A query value is missing, repeated, or absurdly long (400). */
  REQUEST_INVALID: 'INSTALL_REQUEST_INVALID',
  /** store_id is not a UUID (400). */
  STORE_ID_INVALID: 'INSTALL_STORE_ID_INVALID',
  /** The merchant declined on the consent page (403). */
  ACCESS_DENIED: 'INSTALL_ACCESS_DENIED',
  /** The platform redirected back with another OAuth error (400). */
  PLATFORM_ERROR: 'INSTALL_PLATFORM_ERROR',
  /** The callback came without this browser's binding cookie (400). */
  BINDING_MISSING: 'INSTALL_BINDING_MISSING',
  /** State unknown, forged, expired, already used, or begun in another browser (400). */
  STATE_INVALID: 'INSTALL_STATE_INVALID',
  /** The callback's store_id is not the one the install began for (400). */
  STORE_MISMATCH: 'INSTALL_STORE_MISMATCH',
  /** The code was already exchanged by this app: a replay, refused before the platform sees it (400). */
  CODE_REPLAYED: 'INSTALL_CODE_REPLAYED',
  /** The code was refused (invalid_grant) even after one fresh attempt (400). */
  CODE_REJECTED: 'INSTALL_CODE_REJECTED',
  /** The token exchange failed: platform down, 5xx, garbage (502). */
  TOKEN_EXCHANGE_FAILED: 'INSTALL_TOKEN_EXCHANGE_FAILED',
  /**
   * The platform refused the app's own credentials (`invalid_client`): a wrong
   * STORE_APP_CLIENT_SECRET or client id. Retrying cannot help (500).
   */
  CLIENT_REJECTED: 'INSTALL_CLIENT_REJECTED',
  /** The database could not be reached (503). */
  STORAGE_UNAVAILABLE: 'STORAGE_UNAVAILABLE',
  /** The merchant granted fewer scopes than the app needs, and `auth.narrowerScopes` is 'refuse' (403). */
  SCOPES_NOT_GRANTED: 'INSTALL_SCOPES_NOT_GRANTED',
  /** Too many install callbacks from this address, or exchanges in flight (429, Retry-After). */
  RATE_LIMITED: 'INSTALL_RATE_LIMITED',
  /** beforeInstall or afterInstall threw (500). */
  HOOK_FAILED: 'INSTALL_HOOK_FAILED',
} as const;

export type InstallErrorCode = (typeof INSTALL_ERROR_CODES)[keyof typeof INSTALL_ERROR_CODES];
