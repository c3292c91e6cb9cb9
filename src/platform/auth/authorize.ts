/**
 * GET /oauth/authorize: validation of the document's query parameters, the
 * consent page, and POST /oauth/authorize/decision. `validateAuthorizeRequest`
 * is pure so `approveInstall()` applies exactly the same rules without HTML.
 */
import type { AppRegistry, RegisteredApp } from '../apps.js';
import { randomToken } from '../crypto.js';
import { isScope, parseScopeList } from '../scopes.js';

export interface AuthorizeRequest {
  app: RegisteredApp;
  redirectUri: string;
  scopes: string[];
  state: string;
  codeChallenge: string;
  /** The optional `store_id` extension parameter (contract). */
  storeId: string | undefined;
}

export type AuthorizeValidation =
  | { ok: true; request: AuthorizeRequest }
  /** Not safe to redirect (unknown client or redirect_uri): show an error page. */
  | {
      ok: false;
      kind: 'page';
      error: 'invalid_client' | 'invalid_redirect_uri' | 'invalid_request';
      description: string;
      /** For `invalid_redirect_uri`: both URIs, shown on the page. */
      redirectUris?: { registered: string; sent: string };
    }
  | { ok: false; kind: 'redirect'; error: string; description: string; redirectUrl: string };

const PARAMS = [
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'store_id',
] as const;

const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;

/** Builds `redirect_uri` with extra query parameters, keeping any it already has. */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

/**
 * `query` holds each parameter's raw values (repeated parameters are an
 * invalid_request, RFC 6749 §3.1). `storeExists` checks the store_id extension.
 */
export function validateAuthorizeRequest(
  query: ReadonlyMap<string, string[]>,
  deps: { apps: AppRegistry; storeExists: (storeId: string) => boolean },
): AuthorizeValidation {
  const one = (name: string): string | undefined | null => {
    const v = query.get(name);
    if (v === undefined || v.length === 0) return undefined;
    return v.length > 1 ? null : v[0];
  };
  const clientId = one('client_id');
  if (typeof clientId !== 'string' || clientId.length === 0) {
    return {
      ok: false,
      kind: 'page',
      error: 'invalid_request',
      description: 'client_id is missing or repeated.',
    };
  }
  const app = deps.apps.byClientId(clientId);
  if (!app) {
    return {
      ok: false,
      kind: 'page',
      error: 'invalid_client',
      description: 'No app is registered with this client_id.',
    };
  }
  const redirectUri = one('redirect_uri');
  if (typeof redirectUri !== 'string' || redirectUri !== app.redirectUri) {
    // Both URIs, so the developer sees which side to change (the registered one is no secret:
    // every authorize link of the app carries it). What was sent is cut short: anyone can
    // craft this link.
    const sent =
      redirectUri === undefined
        ? '(none)'
        : redirectUri === null
          ? '(sent more than once)'
          : redirectUri.length > 300
            ? `${redirectUri.slice(0, 300)}…`
            : redirectUri;
    return {
      ok: false,
      kind: 'page',
      error: 'invalid_redirect_uri',
      description:
        `The app sent redirect_uri ${sent}, but ${app.redirectUri} is registered for it. ` +
        'An app built on store-app-kit sends {STORE_APP_URL}/auth/callback: set STORE_APP_URL ' +
        "to the registered URI's origin and path, or register the app with the URI it sends.",
      redirectUris: { registered: app.redirectUri, sent },
    };
  }
  const state = one('state');
  const fail = (error: string, description: string): AuthorizeValidation => ({
    ok: false,
    kind: 'redirect',
    error,
    description,
    redirectUrl: withQuery(redirectUri, {
      error,
      error_description: description,
      state: typeof state === 'string' ? state : undefined,
    }),
  });
  for (const p of PARAMS) {
    if (one(p) === null) return fail('invalid_request', `${p} is repeated.`);
  }
  const responseType = one('response_type');
  if (responseType === undefined) return fail('invalid_request', 'response_type is missing.');
  if (responseType !== 'code')
    return fail('unsupported_response_type', 'response_type must be code.');
  if (state === undefined || state === '') return fail('invalid_request', 'state is missing.');
  if (typeof state === 'string' && state.length > 1024) {
    return fail('invalid_request', 'state is longer than 1024 characters.');
  }
  const scopeParam = one('scope');
  if (scopeParam === undefined || scopeParam === null)
    return fail('invalid_request', 'scope is missing.');
  const scopes = parseScopeList(scopeParam);
  if (scopes.length === 0) return fail('invalid_scope', 'scope lists no scope.');
  const unknown = scopes.filter((s) => !isScope(s) || !app.scopes.includes(s));
  if (unknown.length > 0) {
    return fail(
      'invalid_scope',
      `Scopes not registered for this app: ${unknown.join(', ').slice(0, 200)}.`,
    );
  }
  const method = one('code_challenge_method');
  if (method === undefined)
    return fail('invalid_request', 'code_challenge_method is missing (S256 is required).');
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.');
  const challenge = one('code_challenge');
  if (typeof challenge !== 'string' || !CHALLENGE_RE.test(challenge)) {
    return fail('invalid_request', 'code_challenge must be a 43-character base64url S256 hash.');
  }
  const storeId = one('store_id');
  if (typeof storeId === 'string' && !deps.storeExists(storeId)) {
    return fail('invalid_request', 'store_id names no store.');
  }
  return {
    ok: true,
    request: {
      app,
      redirectUri,
      scopes: [...new Set(scopes)],
      state: state as string,
      codeChallenge: challenge,
      storeId: storeId ?? undefined,
    },
  };
}

/** URLSearchParams → name → values (repeats kept so they can be refused). */
export function queryMap(search: URLSearchParams): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [k, v] of search) {
    const list = map.get(k);
    if (list) list.push(v);
    else map.set(k, [v]);
  }
  return map;
}

export interface PendingRequest {
  request: AuthorizeRequest;
  /** Unix ms, real time: consent pages are for people, not for advanceClock. */
  expiresAtMs: number;
}

/** Consent requests waiting for the merchant's decision, keyed by an unguessable single-use id. */
export function createPendingRequests(ttlMs = 10 * 60_000) {
  const pending = new Map<string, PendingRequest>();
  return {
    add(request: AuthorizeRequest): string {
      const now = Date.now();
      if (pending.size > 1000) {
        for (const [id, p] of pending) if (p.expiresAtMs <= now) pending.delete(id);
      }
      const id = randomToken(24);
      pending.set(id, { request, expiresAtMs: now + ttlMs });
      return id;
    },
    take(id: string): AuthorizeRequest | undefined {
      const p = pending.get(id);
      if (!p) return undefined;
      pending.delete(id);
      return p.expiresAtMs > Date.now() ? p.request : undefined;
    },
  };
}

export type PendingRequests = ReturnType<typeof createPendingRequests>;
