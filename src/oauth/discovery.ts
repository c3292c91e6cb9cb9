/**
 * RFC 8414 authorization server metadata: with `oauth.discovery`, the kit
 * reads the authorize, token and session endpoints from
 * `{auth_url}/.well-known/oauth-authorization-server` at start instead of
 * assuming the local platform's paths. Path options set explicitly still win.
 */
import { ConfigError } from '../errors/index.js';
import type { OAuthOptions, ResolvedOAuthOptions } from './options.js';

export const METADATA_PATH = '/.well-known/oauth-authorization-server';

export interface DiscoveredEndpoints {
  authorizeUrl: string;
  tokenUrl: string;
  /** Non-standard `session_endpoint`; null when the server does not name one. */
  sessionCheckUrl: string | null;
}

/**
 * Fetches and checks the metadata. Any failure is a ConfigError on
 * `oauth.discovery`: the kit refuses to start rather than guess endpoints.
 */
export async function discoverEndpoints(
  authUrl: string,
  opts: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<DiscoveredEndpoints> {
  const setting = 'oauth.discovery';
  const doFetch = opts.fetch ?? globalThis.fetch;
  const url = authUrl + METADATA_PATH;
  let body: unknown;
  try {
    const res = await doFetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      redirect: 'error',
    });
    if (res.status !== 200) {
      throw new ConfigError(
        setting,
        `${METADATA_PATH} answered ${res.status}; turn discovery off or set the oauth paths.`,
      );
    }
    body = await res.json();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(
      setting,
      `could not read ${METADATA_PATH} from the auth URL; check STORE_AUTH_URL or turn discovery off.`,
    );
  }
  if (body === null || typeof body !== 'object') {
    throw new ConfigError(setting, 'the metadata is not a JSON object.');
  }
  const m = body as Record<string, unknown>;
  // RFC 8414 §3.3: the issuer must be the URL the metadata was read from.
  if (m.issuer !== authUrl) {
    throw new ConfigError(
      setting,
      'the metadata issuer is not the configured auth URL (RFC 8414 §3.3).',
    );
  }
  const methods = m.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) {
    throw new ConfigError(setting, 'the authorization server does not support PKCE S256.');
  }
  const endpoint = (name: string, required: boolean): string | null => {
    const v = m[name];
    if (v === undefined && !required) return null;
    if (typeof v !== 'string') throw new ConfigError(setting, `the metadata has no ${name}.`);
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw new ConfigError(setting, `the metadata's ${name} is not an absolute URL.`);
    }
    // Never downgrade: an HTTPS auth URL must not hand out plain-HTTP endpoints.
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && authUrl.startsWith('http:'))) {
      throw new ConfigError(setting, `the metadata's ${name} must use HTTPS.`);
    }
    return u.toString();
  };
  return {
    authorizeUrl: endpoint('authorization_endpoint', true)!,
    tokenUrl: endpoint('token_endpoint', true)!,
    sessionCheckUrl: endpoint('session_endpoint', false),
  };
}

/**
 * The resolved OAuth options with discovered endpoints in place of the
 * defaults; a path the app set itself is kept.
 */
export async function withDiscoveredEndpoints(
  oauth: ResolvedOAuthOptions,
  explicit: OAuthOptions = {},
  opts: { fetch?: typeof fetch } = {},
): Promise<ResolvedOAuthOptions> {
  if (!oauth.discovery) return oauth;
  const found = await discoverEndpoints(oauth.authUrl, {
    timeoutMs: oauth.tokenTimeoutMs,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  return {
    ...oauth,
    authorizeUrl: explicit.authorizePath ? oauth.authorizeUrl : found.authorizeUrl,
    tokenUrl: explicit.tokenPath ? oauth.tokenUrl : found.tokenUrl,
    refreshUrl: explicit.refreshPath ? oauth.refreshUrl : found.tokenUrl,
    sessionCheckUrl:
      explicit.sessionCheckPath || found.sessionCheckUrl === null
        ? oauth.sessionCheckUrl
        : found.sessionCheckUrl,
  };
}
