/**
 * One API call, end to end: concurrency and pacing gate, bearer token, timeout
 * and caller's AbortSignal, retries (429, network, 5xx), one replay after a
 * refresh on 401 token_expired, flag for re-authorisation on token_revoked, and the mapping of
 * every failure to a typed error.
 */
import { StoreAppError } from '../errors/index.js';
import {
  AbortedError,
  type ApiErrorContext,
  ConflictError,
  type ErrorDetail,
  InsufficientScopeError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ResponseInvalidError,
  StoreApiError,
  TimeoutError,
  TokenExpiredError,
  TokenRevokedError,
  ValidationError,
} from './errors.js';
import type { ResolvedClientOptions } from './options.js';
import { type RateLimiter, sleep } from './ratelimit.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

export type QueryValue = string | number | boolean | null | undefined | readonly string[];

export interface RequestOptions {
  /** Query parameters; `undefined`/`null` are left out, arrays repeat the key. */
  query?: Record<string, QueryValue>;
  /** JSON body (serialised by the client). */
  body?: unknown;
  /** Cancels the call, including waits for rate limits and retries. */
  signal?: AbortSignal;
  /** Per-attempt time limit overriding the client's `timeoutMs`. */
  timeoutMs?: number;
}

/** Where the client gets tokens; implemented by the kit's token manager. */
export interface TokenSource {
  /** A token that is not expired (refreshed first when within the window). */
  getAccessToken(storeId: string, signal?: AbortSignal): Promise<string>;
  /** The platform rejected `rejectedToken` as expired: refresh once (single-flight) and return the new one. */
  refreshRejected(storeId: string, rejectedToken: string, signal?: AbortSignal): Promise<string>;
  /**
   * The platform answered token_revoked for `revokedToken`. Flags the installation
   * as needing re-authorisation (never purges) when it still holds that token and
   * returns true; returns false when a newer install replaced it, so the call is replayed.
   */
  revoked(storeId: string, revokedToken: string): Promise<boolean>;
}

/** The logger shape the client needs (pino's Logger fits). */
export interface ClientLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface Transport {
  readonly storeId: string;
  call(method: HttpMethod, path: string, options?: RequestOptions): Promise<unknown>;
}

const CONNECT_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Deprecation/Sunset notices already logged in this process (once each). */
const loggedNotices = new Set<string>();

/** @internal for tests */
export function resetDeprecationNotices(): void {
  loggedNotices.clear();
}

function buildUrl(
  baseUrl: string,
  basePath: string,
  path: string,
  query?: Record<string, QueryValue>,
): URL {
  if (!path.startsWith('/') || path.startsWith('//')) {
    throw new StoreApiError('INVALID_PATH', 'API paths must start with a single "/".', { path });
  }
  const url = new URL(baseUrl + path);
  // Dot segments ("/../", "/%2e%2e/") are resolved by the URL parser: stay under {base_url}.
  if (!url.pathname.startsWith(basePath)) {
    throw new StoreApiError('INVALID_PATH', 'API paths must stay under the API base URL.', {
      path,
    });
  }
  if (query) {
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) for (const v of value) url.searchParams.append(key, String(v));
      else url.searchParams.set(key, String(value));
    }
  }
  return url;
}

/** Retry-After is seconds or an HTTP-date; returns seconds (never negative), or undefined. */
export function parseRetryAfter(raw: string | null, now = Date.now()): number | undefined {
  if (raw === null) return undefined;
  const trimmed = raw.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

function errorCodeOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function jitter(ms: number): number {
  return Math.random() * ms;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toDetails(v: unknown): ErrorDetail[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord) as ErrorDetail[];
}

function scopeFromWwwAuthenticate(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /scope="([^"]*)"/i.exec(header);
  return m?.[1] || undefined;
}

function short(text: string, max = 300): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

export function createTransport(deps: {
  storeId: string;
  options: ResolvedClientOptions;
  tokens: TokenSource;
  limiter: RateLimiter;
  logger?: ClientLogger;
}): Transport {
  const { storeId, options, tokens, limiter, logger } = deps;
  const baseUrl = options.baseUrl;
  const basePath = baseUrl ? `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/` : '/';
  const gate = limiter.forStore(storeId);

  function noticeDeprecation(headers: Headers, method: string, path: string) {
    const deprecation = headers.get('deprecation');
    const sunset = headers.get('sunset');
    if (deprecation === null && sunset === null) return;
    const key = `${deprecation ?? ''}|${sunset ?? ''}`;
    if (loggedNotices.has(key)) return;
    loggedNotices.add(key);
    logger?.warn(
      { deprecation, sunset, link: headers.get('link'), method, path },
      'The platform API marks this endpoint or version deprecated; plan the move before the sunset date.',
    );
  }

  /** One HTTP exchange; throws only StoreApiError subclasses. */
  async function attempt(
    method: HttpMethod,
    url: URL,
    path: string,
    token: string,
    body: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<RawResponse> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      'x-store-id': storeId,
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const ctx = { method, path };
    let res: Response;
    try {
      res = await options.fetch(url, { method, headers, body, signal: combined });
    } catch (err) {
      if (signal?.aborted) throw new AbortedError({ ...ctx, cause: err });
      if (timeout.aborted) throw new TimeoutError(timeoutMs, ctx);
      const code = errorCodeOf(err);
      const neverConnected = code !== undefined && CONNECT_ERROR_CODES.has(code);
      const e = new NetworkError(
        neverConnected
          ? `Could not reach the platform (${code}); check the platform URL and the network.`
          : `The connection to the platform failed before a response${code ? ` (${code})` : ''}.`,
        { ...ctx, cause: err },
      );
      if (neverConnected) connectFailures.add(e);
      throw e;
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw new AbortedError({ ...ctx, cause: err });
      if (timeout.aborted) throw new TimeoutError(timeoutMs, ctx);
      throw new ResponseInvalidError(
        `The connection closed before the platform's response body was complete (status ${res.status}).`,
        { ...ctx, cause: err },
      );
    }
    return { status: res.status, headers: res.headers, text };
  }

  /** Errors thrown before the request could reach the server (safe to retry any method). */
  const connectFailures = new WeakSet<Error>();

  function parseJson(raw: RawResponse, ctx: ApiErrorContext): unknown {
    const type = raw.headers.get('content-type') ?? '';
    if (!/\bjson\b/i.test(type)) {
      throw new ResponseInvalidError(
        `The platform answered ${raw.status} with ${type ? `"${short(type, 60)}"` : 'no content type'} instead of JSON.`,
        ctx,
      );
    }
    try {
      return JSON.parse(raw.text) as unknown;
    } catch (cause) {
      throw new ResponseInvalidError(`The platform answered ${raw.status} with malformed JSON.`, {
        ...ctx,
        cause,
      });
    }
  }

  function mapError(raw: RawResponse, method: string, path: string): StoreApiError {
    const ctx: ApiErrorContext = { method, path, status: raw.status };
    let body: unknown;
    try {
      body = parseJson(raw, ctx);
    } catch {
      body = undefined;
    }
    const obj = isRecord(body) ? body : {};
    const code = typeof obj.code === 'string' ? obj.code : undefined;
    const text = typeof obj.error === 'string' ? short(obj.error) : undefined;
    const details = toDetails(obj.details);
    const full: ApiErrorContext = { ...ctx, details, body };
    const message = `${method} ${path} failed with ${raw.status}${text ? `: ${text}` : ''}`;
    switch (raw.status) {
      case 422:
        return new ValidationError(message, full);
      case 404:
        return new NotFoundError(message, full);
      case 409:
        return new ConflictError(message, code ?? 'CONFLICT', full);
      case 403:
        if (
          code === 'insufficient_scope' ||
          /insufficient_scope/i.test(raw.headers.get('www-authenticate') ?? '')
        ) {
          const scope =
            typeof obj.requiredScope === 'string'
              ? obj.requiredScope
              : scopeFromWwwAuthenticate(raw.headers.get('www-authenticate'));
          return new InsufficientScopeError(scope, full);
        }
        break;
    }
    if (raw.status >= 500 && body === undefined) {
      return new StoreApiError('API_ERROR', `${method} ${path} failed with ${raw.status}.`, full);
    }
    return new StoreApiError(code ?? 'API_ERROR', message, full);
  }

  function backoff(attemptNo: number): number {
    const cap = Math.min(options.retries.maxDelayMs, options.retries.baseDelayMs * 2 ** attemptNo);
    // Full jitter: spreads a crowd of retrying callers.
    return jitter(cap);
  }

  async function call(
    method: HttpMethod,
    path: string,
    opts: RequestOptions = {},
  ): Promise<unknown> {
    if (!baseUrl) {
      throw new StoreApiError(
        'CLIENT_NOT_CONFIGURED',
        'The client has no baseUrl; pass platformUrl to storeApp() or baseUrl to the client.',
      );
    }
    const url = buildUrl(baseUrl, basePath, path, opts.query);
    const logPath = url.pathname;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const timeoutMs = opts.timeoutMs ?? options.timeoutMs;
    const idempotent = method !== 'POST' && method !== 'PATCH';
    const signal = opts.signal;
    const ctx = { method, path: logPath };
    let retries = 0;
    let replayed = false;

    for (;;) {
      if (signal?.aborted) throw new AbortedError(ctx);
      let release: () => void;
      try {
        release = await gate.acquire(signal);
      } catch (err) {
        // The store is blocked by an earlier 429 for longer than the client waits.
        if (err instanceof RateLimitedError) throw new RateLimitedError(err.retryAfter, ctx);
        throw err;
      }
      let raw: RawResponse;
      let token: string;
      try {
        token = await tokens.getAccessToken(storeId, signal);
        raw = await attempt(method, url, logPath, token, body, timeoutMs, signal);
      } catch (err) {
        release();
        if (!(err instanceof StoreApiError)) throw err;
        const retryable =
          (err instanceof NetworkError && (idempotent || connectFailures.has(err))) ||
          (idempotent && (err instanceof TimeoutError || err instanceof ResponseInvalidError));
        if (retryable && retries < options.retries.max) {
          await sleep(backoff(retries++), signal);
          continue;
        }
        throw err;
      }
      release();
      gate.observe(raw.headers);
      noticeDeprecation(raw.headers, method, logPath);

      if (raw.status >= 200 && raw.status < 300) {
        if (raw.status === 204 || raw.text.length === 0) return undefined;
        return parseJson(raw, { ...ctx, status: raw.status });
      }

      if (raw.status === 401) {
        const err = mapError(raw, method, logPath);
        if (err.code === 'token_revoked') {
          let current = true;
          try {
            current = await tokens.revoked(storeId, token);
          } catch (cause) {
            // Failing to flag the installation must not hide the revocation from the caller.
            logger?.warn(
              { storeId, code: cause instanceof StoreAppError ? cause.code : undefined },
              'Could not flag the installation after token_revoked; the next call tries again.',
            );
          }
          if (!current && !replayed) {
            replayed = true;
            continue;
          }
          throw new TokenRevokedError({ ...ctx, details: err.details, body: err.body });
        }
        if ((err.code === 'token_expired' || err.code === 'invalid_token') && !replayed) {
          // Another process may have rotated the token, or the platform's clock says expired
          // before ours does: refresh (single-flight) and replay once.
          replayed = true;
          await tokens.refreshRejected(storeId, token, signal);
          continue;
        }
        if (err.code === 'token_expired') {
          throw new TokenExpiredError({ ...ctx, details: err.details, body: err.body });
        }
        throw err;
      }

      if (raw.status === 429) {
        const retryAfter =
          parseRetryAfter(raw.headers.get('retry-after')) ??
          // No Retry-After: fall back to the window reset, else one second.
          resetSeconds(raw.headers) ??
          1;
        const waitMs = retryAfter * 1000 + jitter(Math.min(1000, 250 + retryAfter * 100));
        gate.block(retryAfter * 1000);
        if (retries < options.retries.max && retryAfter * 1000 <= options.retries.maxDelayMs) {
          retries++;
          await sleep(waitMs, signal);
          continue;
        }
        const mapped = mapError(raw, method, logPath);
        throw new RateLimitedError(retryAfter, {
          ...ctx,
          details: mapped.details,
          body: mapped.body,
        });
      }

      if (raw.status >= 500 && idempotent && retries < options.retries.max) {
        await sleep(backoff(retries++), signal);
        continue;
      }
      throw mapError(raw, method, logPath);
    }
  }

  return { storeId, call };
}

function resetSeconds(headers: Headers): number | undefined {
  const raw = headers.get('x-ratelimit-reset');
  if (raw === null || !/^\d+$/.test(raw.trim())) return undefined;
  const delta = Number(raw) - Math.floor(Date.now() / 1000);
  // A reset far off means the clocks differ; do not trust it for a wait.
  return delta > 0 && delta <= 60 ? delta : undefined;
}
