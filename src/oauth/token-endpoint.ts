/**
 * Calls to the platform's token endpoint (code exchange and refresh). Pure
 * apart from the one fetch (and its span): no storage, no Express.
 *
 * Tolerant where the platform may omit fields (refresh_token, expires_in,
 * scope), strict where a field has the wrong type: a response we cannot trust
 * is refused with TOKEN_RESPONSE_INVALID rather than stored half-right.
 */
import type { Span } from '@opentelemetry/api';
import { concat, fromUtf8 } from '../crypto/primitives.js';
import { ATTR, inSpan, SpanKind, serverAttributes } from '../telemetry/index.js';
import {
  OAuthError,
  type OAuthErrorCode,
  TOKEN_ENDPOINT_UNAVAILABLE,
  TOKEN_RESPONSE_INVALID,
} from './errors.js';

export { OAuthError } from './errors.js';

export interface TokenEndpointConfig {
  /** Absolute URL of the token endpoint, e.g. `{auth_url}/oauth/token`. */
  url: string;
  clientId: string;
  clientSecret: string;
  /** `json` (the platform document's body) or `form` (RFC 6749, client_secret_post). */
  encoding: 'json' | 'form';
}

export type TokenGrant =
  | { grant_type: 'authorization_code'; code: string; redirect_uri: string; code_verifier: string }
  | { grant_type: 'refresh_token'; refresh_token: string };

export interface TokenRequestOptions {
  /** Aborts the request; an abort by the caller rethrows the signal's reason. */
  signal?: AbortSignal;
  /**
   * Give up after this long (answers TOKEN_ENDPOINT_UNAVAILABLE, retryable).
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * The fetch to use (tests, proxies).
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
}

export interface TokenResponse {
  accessToken: string;
  /** null when the platform issued none (refresh: keep the old one). */
  refreshToken: string | null;
  /** Seconds; 86400 when the platform omitted it. */
  expiresIn: number;
  /** Granted scopes; [] when the platform omitted `scope` (see scopeMissing). */
  scopes: string[];
  /** True when the response had no `scope`: per RFC 6749 §5.1 the scope is unchanged. */
  scopeMissing: boolean;
  storeId: string | null;
  tokenType: string;
  /**
   * The response's `Date` header (RFC 9110, whole seconds): when the platform
   * issued the tokens, in the platform's clock. null when absent or unparseable.
   */
  serverDate: Date | null;
}

/** Lifetime assumed when a response has no expires_in (the document's value). */
export const DEFAULT_EXPIRES_IN_SECONDS = 86_400;
const DEFAULT_TIMEOUT_MS = 10_000;
/** A token response is small; anything bigger is not one. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const ERROR_CODE_PATTERN = /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/;

/**
 * One call to the token endpoint (exchange or refresh), in a CLIENT span
 * named `POST {path}` carrying the grant type, never the grant's values.
 */
export function requestToken(
  endpoint: TokenEndpointConfig,
  grant: TokenGrant,
  opts: TokenRequestOptions = {},
): Promise<TokenResponse> {
  const path = safePath(endpoint.url);
  return inSpan(
    `POST ${path}`,
    {
      kind: SpanKind.CLIENT,
      operation: 'token',
      attributes: () => ({
        [ATTR.httpMethod]: 'POST',
        [ATTR.urlTemplate]: path,
        [ATTR.grantType]: grant.grant_type,
        ...serverAttributes(endpoint.url),
      }),
    },
    (span) => callTokenEndpoint(endpoint, grant, opts, span),
  );
}

async function callTokenEndpoint(
  endpoint: TokenEndpointConfig,
  grant: TokenGrant,
  opts: TokenRequestOptions,
  span: Span,
): Promise<TokenResponse> {
  const method = 'POST';
  const path = safePath(endpoint.url);
  const ctx = { method, path };
  const doFetch = opts.fetch ?? globalThis.fetch;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  const params: Record<string, string> = {
    ...grant,
    client_id: endpoint.clientId,
    client_secret: endpoint.clientSecret,
  };
  const body =
    endpoint.encoding === 'json' ? JSON.stringify(params) : new URLSearchParams(params).toString();
  const contentType =
    endpoint.encoding === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';

  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;

  let res: Response;
  let text: string;
  try {
    res = await doFetch(endpoint.url, {
      method,
      headers: { 'content-type': contentType, accept: 'application/json' },
      body,
      signal,
      redirect: 'manual',
    });
    text = await readLimited(res, ctx);
  } catch (cause) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (cause instanceof OAuthError) throw cause;
    const timedOut = timeout.aborted;
    throw new OAuthError(
      TOKEN_ENDPOINT_UNAVAILABLE,
      timedOut
        ? `The token endpoint did not answer within ${timeoutMs} ms; try again later.`
        : 'The token endpoint could not be reached; try again later.',
      { ...ctx, cause: timedOut ? undefined : stripCause(cause), retryable: true, status: 502 },
    );
  }

  if (span.isRecording()) span.setAttribute(ATTR.httpStatus, res.status);
  if (res.status >= 500 || res.status === 429) {
    const retryAfterMs = retryAfterOf(res.headers);
    throw new OAuthError(
      TOKEN_ENDPOINT_UNAVAILABLE,
      `The token endpoint answered ${res.status}; try again later.`,
      {
        ...ctx,
        retryable: true,
        status: 502,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      },
    );
  }

  const json = parseJson(text);
  if (res.status !== 200) {
    const code = errorCodeOf(json);
    if (code === null) {
      throw new OAuthError(
        TOKEN_RESPONSE_INVALID,
        `The token endpoint answered ${res.status} without an OAuth error body.`,
        { ...ctx, status: 502 },
      );
    }
    throw new OAuthError(code, `The token endpoint refused the request: ${code} (${res.status}).`, {
      ...ctx,
      status: res.status,
    });
  }
  return { ...parseTokenResponse(json, ctx), serverDate: parseHttpDate(res.headers.get('date')) };
}

/** Longest Retry-After taken from the token endpoint (a larger one is read as this). */
const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * The response's Retry-After in ms (delay-seconds, or an HTTP-date read against
 * the same response's Date: one clock), or undefined when absent or unreadable.
 */
function retryAfterOf(headers: Headers): number | undefined {
  const raw = headers.get('retry-after')?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d{1,9}$/.test(raw)) return Math.min(Number(raw) * 1000, MAX_RETRY_AFTER_MS);
  const at = parseHttpDate(raw);
  const date = parseHttpDate(headers.get('date'));
  if (at === null || date === null) return undefined;
  return Math.min(Math.max(0, at.getTime() - date.getTime()), MAX_RETRY_AFTER_MS);
}

/** An RFC 9110 HTTP-date, or null; years outside 2000–2999 are treated as garbage. */
export function parseHttpDate(value: string | null): Date | null {
  if (value === null || value.length > 64) return null;
  const d = new Date(value);
  const y = d.getUTCFullYear();
  return Number.isNaN(d.getTime()) || y < 2000 || y > 2999 ? null : d;
}

function parseTokenResponse(
  json: unknown,
  ctx: { method: string; path: string },
): Omit<TokenResponse, 'serverDate'> {
  const invalid = (what: string) =>
    new OAuthError(TOKEN_RESPONSE_INVALID, `The token response is invalid: ${what}.`, {
      ...ctx,
      status: 502,
    });
  if (json === undefined || json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw invalid('not a JSON object');
  }
  const o = json as Record<string, unknown>;

  if (typeof o.access_token !== 'string' || o.access_token.length === 0) {
    throw invalid('access_token missing or not a string');
  }
  let refreshToken: string | null = null;
  if (o.refresh_token !== undefined && o.refresh_token !== null) {
    if (typeof o.refresh_token !== 'string' || o.refresh_token.length === 0) {
      throw invalid('refresh_token is not a string');
    }
    refreshToken = o.refresh_token;
  }
  let expiresIn = DEFAULT_EXPIRES_IN_SECONDS;
  if (o.expires_in !== undefined && o.expires_in !== null) {
    if (typeof o.expires_in !== 'number' || !Number.isInteger(o.expires_in) || o.expires_in <= 0) {
      throw invalid('expires_in is not a positive integer');
    }
    expiresIn = o.expires_in;
  }
  let scopes: string[] = [];
  let scopeMissing = true;
  if (o.scope !== undefined && o.scope !== null) {
    if (typeof o.scope !== 'string') throw invalid('scope is not a string');
    scopes = parseScopeString(o.scope);
    scopeMissing = false;
  }
  let storeId: string | null = null;
  if (o.store_id !== undefined && o.store_id !== null) {
    if (typeof o.store_id !== 'string' || o.store_id.length === 0) {
      throw invalid('store_id is not a string');
    }
    storeId = o.store_id;
  }
  let tokenType = 'Bearer';
  if (o.token_type !== undefined && o.token_type !== null) {
    if (typeof o.token_type !== 'string') throw invalid('token_type is not a string');
    if (o.token_type.toLowerCase() !== 'bearer') throw invalid('token_type is not Bearer');
    tokenType = o.token_type;
  }
  return {
    accessToken: o.access_token,
    refreshToken,
    expiresIn,
    scopes,
    scopeMissing,
    storeId,
    tokenType,
  };
}

/**
 * The document's scope strings are comma-separated; RFC 6749 uses spaces. Both
 * are accepted so a platform following either is understood.
 */
export function parseScopeString(scope: string): string[] {
  const seen = new Set<string>();
  for (const s of scope.split(/[\s,]+/)) if (s) seen.add(s);
  return [...seen];
}

function errorCodeOf(json: unknown): OAuthErrorCode | null {
  if (json === null || typeof json !== 'object') return null;
  const err = (json as Record<string, unknown>).error;
  if (typeof err !== 'string' || !ERROR_CODE_PATTERN.test(err)) return null;
  return err;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readLimited(res: Response, ctx: { method: string; path: string }): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_RESPONSE_BYTES) {
    await res.body?.cancel();
    throw new OAuthError(TOKEN_RESPONSE_INVALID, 'The token response is too large.', {
      ...ctx,
      status: 502,
    });
  }
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // A reader, not `for await`: every runtime's ReadableStream has one.
  const reader = res.body.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    const chunk = read.value as Uint8Array;
    size += chunk.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new OAuthError(TOKEN_RESPONSE_INVALID, 'The token response is too large.', {
        ...ctx,
        status: 502,
      });
    }
    chunks.push(chunk);
  }
  return fromUtf8(concat(...chunks));
}

/** The path only: never a query string, never credentials in the URL. */
function safePath(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * Network errors from undici can carry the request in their cause chain; keep
 * only the name and code so no body or secret travels with the error.
 */
function stripCause(cause: unknown): Error | undefined {
  if (!(cause instanceof Error)) return undefined;
  const inner = (cause as { cause?: { code?: unknown } }).cause;
  const code = typeof inner?.code === 'string' ? inner.code : undefined;
  const e = new Error(code ? `${cause.name}: ${code}` : cause.name);
  return e;
}
