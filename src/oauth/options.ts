/**
 * OAuth options of `storeApp()` (`options.oauth`). Every field can also come
 * from the environment; options win over the environment.
 */
export interface OAuthOptions {
  /**
   * The app's client id from the developer dashboard.
   * @default process.env.STORE_APP_CLIENT_ID (required)
   */
  clientId?: string;
  /**
   * The app's client secret. Server-side only: never logged, never sent to a browser.
   * @default process.env.STORE_APP_CLIENT_SECRET (required)
   */
  clientSecret?: string;
  /**
   * Scopes the app asks for (an array, or a comma-separated string). Only those needed.
   * @default process.env.STORE_APP_SCOPES (required)
   */
  scopes?: readonly string[] | string;
  /**
   * The platform's `{auth_url}` (authorization page and token endpoint host).
   * @default process.env.STORE_AUTH_URL (required)
   */
  authUrl?: string;
  /**
   * The platform's `{base_url}`, including `/api/v1`.
   * @default process.env.STORE_API_URL, else `{authUrl}/api/v1`
   */
  apiUrl?: string;
  /**
   * Path of the authorization page on `authUrl`.
   * @default '/oauth/authorize'
   */
  authorizePath?: string;
  /**
   * Path of the token exchange (POST) on `authUrl`.
   * @default '/oauth/token'
   */
  tokenPath?: string;
  /**
   * Path of the token refresh (POST) on `authUrl`.
   * @default '/oauth/token'
   */
  refreshPath?: string;
  /**
   * Path of the session check (GET with a bearer token) on `authUrl`.
   * @default '/oauth/session'
   */
  sessionCheckPath?: string;
  /**
   * Body encoding of token requests: the document's JSON, or RFC 6749 form encoding.
   * @default 'json'
   */
  tokenRequestEncoding?: 'json' | 'form';
  /**
   * Send the `store_id` extension parameter on the authorize URL when the install began for one.
   * @default true
   */
  sendStoreIdOnAuthorize?: boolean;
  /**
   * Stamp each install with the token response's `Date` header (the platform's
   * clock) and decide uninstall vs reinstall in that clock
   * (docs/platform-contract.md). Turn off only for a platform whose `Date`
   * does not follow its own clock; installs are then compared in ours.
   * @default true
   */
  installTimeFromServerDate?: boolean;
  /**
   * Read the endpoints from the server's RFC 8414 metadata
   * (`{authUrl}/.well-known/oauth-authorization-server`) at start. Paths set
   * explicitly above still win. A missing or inconsistent document fails the start.
   * @default false
   */
  discovery?: boolean;
  /**
   * Time limit of one token endpoint call, in milliseconds.
   * @default 10000
   */
  tokenTimeoutMs?: number;
}

export interface ResolvedOAuthOptions {
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Origin (and base path, if any) without a trailing slash. */
  authUrl: string;
  apiUrl: string;
  authorizeUrl: string;
  tokenUrl: string;
  refreshUrl: string;
  sessionCheckUrl: string;
  tokenRequestEncoding: 'json' | 'form';
  sendStoreIdOnAuthorize: boolean;
  installTimeFromServerDate: boolean;
  tokenTimeoutMs: number;
  discovery: boolean;
}
