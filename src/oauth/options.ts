/**
 * OAuth options of `storeApp()` (`options.oauth`). Every field marked with an
 * environment variable can also come from there; options win.
 */
import * as v from 'valibot';
import { boolean, commaList, httpUrl, integer, required, urlPath } from '../options/index.js';
import { OAUTH_ENV } from './env.js';
import { KNOWN_SCOPES } from './scopes.js';

export { OAUTH_ENV };

const API_PATH = '/api/v1';

function credential(what: string) {
  return required(
    v.pipe(
      v.string(`must be a non-empty string (${what}).`),
      v.trim(),
      v.nonEmpty(`must be a non-empty string (${what}).`),
    ),
    `set it to ${what}.`,
    { placeholderFix: `set it to ${what}.` },
  );
}

const scopes = required(
  v.pipe(
    commaList('must be an array or a comma-separated string.'),
    v.check((list) => list.length > 0, 'must name at least one scope.'),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return;
      const known: readonly string[] = KNOWN_SCOPES;
      const unknown = dataset.value.filter((x) => !known.includes(x));
      if (unknown.length > 0) {
        addIssue({
          message: `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((x) => JSON.stringify(x.slice(0, 64))).join(', ')}; valid scopes are: ${KNOWN_SCOPES.join(', ')}.`,
        });
      }
    }),
  ),
  'list the scopes your app needs, comma-separated (e.g. read_products,read_orders).',
);

/** Who the app is and what it asks for. */
const identityEntries = {
  /**
   * The app's client id from the developer dashboard.
   * @default process.env.STORE_APP_CLIENT_ID (required)
   */
  clientId: credential('the client id from the developer dashboard'),
  /**
   * The app's client secret. Server-side only: never logged, never sent to a browser.
   * @default process.env.STORE_APP_CLIENT_SECRET (required)
   */
  clientSecret: credential('the client secret from the developer dashboard'),
  /**
   * Scopes the app asks for (an array, or a comma-separated string). Only those needed.
   * @default process.env.STORE_APP_SCOPES (required)
   */
  scopes,
};

/** Where the platform's endpoints are; `relaxed` accepts plain-HTTP URLs outside loopback. */
function endpointEntries(relaxed: boolean) {
  return {
    /**
     * The platform's `{auth_url}` (authorization page and token endpoint host).
     * @default process.env.STORE_AUTH_URL (required)
     */
    authUrl: required(
      httpUrl("the platform's {auth_url}", relaxed),
      "set it to the platform's {auth_url}.",
    ),
    /**
     * The platform's `{base_url}`, including `/api/v1`.
     * @default process.env.STORE_API_URL, else `{authUrl}/api/v1`
     */
    apiUrl: v.optional(httpUrl("the platform's {base_url}, ending in /api/v1", relaxed)),
    /**
     * Path of the authorization page on `authUrl`.
     * @default '/oauth/authorize'
     */
    authorizePath: v.optional(urlPath(), '/oauth/authorize'),
    /**
     * Path of the token exchange (POST) on `authUrl`.
     * @default '/oauth/token'
     */
    tokenPath: v.optional(urlPath(), '/oauth/token'),
    /**
     * Path of the token refresh (POST) on `authUrl`.
     * @default '/oauth/token'
     */
    refreshPath: v.optional(urlPath(), '/oauth/token'),
    /**
     * Path of the session check (GET with a bearer token) on `authUrl`.
     * @default '/oauth/session'
     */
    sessionCheckPath: v.optional(urlPath(), '/oauth/session'),
  };
}

/** How token requests are made and installs stamped. */
const exchangeEntries = {
  /**
   * Body encoding of token requests: the document's JSON, or RFC 6749 form encoding.
   * @default 'json'
   */
  tokenRequestEncoding: v.optional(
    v.picklist(['json', 'form'], "must be 'json' or 'form'."),
    'json',
  ),
  /**
   * Send the `store_id` extension parameter on the authorize URL when the install began for one.
   * @default true
   */
  sendStoreIdOnAuthorize: v.optional(boolean(), true),
  /**
   * Stamp each install with the token response's `Date` header (the platform's
   * clock) and decide uninstall vs reinstall in that clock
   * (docs/platform-contract.md). Turn off only for a platform whose `Date`
   * does not follow its own clock; installs are then compared in ours.
   * @default true
   */
  installTimeFromServerDate: v.optional(boolean(), true),
  /**
   * Read the endpoints from the server's RFC 8414 metadata
   * (`{authUrl}/.well-known/oauth-authorization-server`) at start. Paths set
   * explicitly above still win. A missing or inconsistent document fails the start.
   * @default false
   */
  discovery: v.optional(boolean(), false),
  /**
   * Time limit of one token endpoint call, in milliseconds.
   * @default 10000
   */
  tokenTimeoutMs: v.optional(integer(100), 10_000),
};

/** The `oauth` object's entries, in the order they are documented and listed. */
function oauthObject(relaxed: boolean) {
  return v.strictObject({
    ...identityEntries,
    ...endpointEntries(relaxed),
    ...exchangeEntries,
  });
}

/** The resolved options: the endpoints as absolute URLs. */
function resolveOAuthOptions(
  o: v.InferOutput<ReturnType<typeof oauthObject>>,
): ResolvedOAuthOptions {
  return {
    clientId: o.clientId,
    clientSecret: o.clientSecret,
    scopes: o.scopes,
    authUrl: o.authUrl,
    apiUrl: o.apiUrl ?? o.authUrl + API_PATH,
    authorizeUrl: o.authUrl + o.authorizePath,
    tokenUrl: o.authUrl + o.tokenPath,
    refreshUrl: o.authUrl + o.refreshPath,
    sessionCheckUrl: o.authUrl + o.sessionCheckPath,
    tokenRequestEncoding: o.tokenRequestEncoding,
    sendStoreIdOnAuthorize: o.sendStoreIdOnAuthorize,
    installTimeFromServerDate: o.installTimeFromServerDate,
    tokenTimeoutMs: o.tokenTimeoutMs,
    discovery: o.discovery,
  };
}

/**
 * The `oauth` schema. `relaxed` (NODE_ENV development or test) accepts plain
 * HTTP URLs outside loopback.
 */
export function oauthOptionsSchema(relaxed: boolean) {
  return v.pipe(oauthObject(relaxed), v.transform(resolveOAuthOptions));
}

export type OAuthOptions = v.InferInput<ReturnType<typeof oauthOptionsSchema>>;

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
