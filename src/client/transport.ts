/**
 * One API call, end to end: concurrency and pacing gate, bearer token, timeout
 * and caller's AbortSignal, same-origin redirects only, retries (429, network,
 * 5xx), one replay after a refresh on 401 token_expired, flag for
 * re-authorisation on token_revoked, and the mapping of every failure to a
 * typed error.
 */
import type { Span } from '@opentelemetry/api';
import { StoreAppError } from '../errors/index.js';
import {
  ATTR,
  countRateLimited,
  EVENT,
  inSpan,
  SpanKind,
  serverAttributes,
  urlTemplate,
} from '../telemetry/index.js';
import {
  AbortedError,
  type ApiErrorContext,
  ConflictError,
  type ErrorDetail,
  InsufficientScopeError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  RedirectRefusedError,
  ResponseInvalidError,
  StoreApiError,
  TimeoutError,
  TokenExpiredError,
  TokenRevokedError,
  ValidationError,
} from './errors.js';
import type { ResolvedClientOptions } from './options.js';
import {
  type RateLimiter,
  resetInMs,
  responseDate,
  type Slot,
  sleep,
  WINDOW_MS,
} from './ratelimit.js';

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
  /** A path under `{base_url}`, or an absolute URL on the platform (the session check). */
  call(method: HttpMethod, target: string | URL, options?: RequestOptions): Promise<unknown>;
  /** Where `client.session()` goes; undefined when the client has no base URL. */
  readonly sessionCheckUrl: URL | undefined;
}

const CONNECT_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

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

/**
 * Retry-After is seconds or an HTTP-date; returns seconds (never negative), or undefined.
 * `now` should be the response's own Date (the platform's clock) when it has one.
 */
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

/** What one API call sends, fixed before its first attempt. */
interface CallPlan {
  method: HttpMethod;
  url: URL;
  /** The URL's path, as logs and errors name it (never the query). */
  path: string;
  body: string | undefined;
  timeoutMs: number;
  /** GET/PUT/DELETE: safe to send again after an unclear failure. */
  idempotent: boolean;
  signal: AbortSignal | undefined;
  ctx: { method: HttpMethod; path: string };
  span: Span;
  recording: boolean;
}

/** What one API call has spent so far, across its sends. */
interface CallState {
  retries: number;
  rateLimitRetries: number;
  /** The one replay after a rotated or revoked token was used. */
  replayed: boolean;
  /** Time spent waiting for the rate limit (pacing and 429s). */
  waitedMs: number;
}

/** `sendPaced`'s answer when the attempt failed in a retryable way and its backoff passed. */
const SEND_AGAIN = Symbol('send again');

interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * fetch, following redirects by hand: only to the same origin, because the
 * bearer token and X-Store-Id go with every hop (fetch itself would forward
 * X-Store-Id anywhere). 303, and 301/302 after a POST, continue as GET.
 */
async function fetchSameOrigin(
  fetchFn: ResolvedClientOptions['fetch'],
  first: URL,
  firstMethod: HttpMethod,
  headers: Record<string, string>,
  firstBody: string | undefined,
  signal: AbortSignal,
  ctx: ApiErrorContext,
): Promise<Response> {
  let url = first;
  let method: string = firstMethod;
  let body = firstBody;
  for (let hop = 0; ; hop++) {
    const res = await fetchFn(url, { method, headers, body, signal, redirect: 'manual' });
    if (!REDIRECT_STATUSES.has(res.status)) return res;
    const location = res.headers.get('location');
    if (location === null) return res;
    await res.body?.cancel().catch(() => undefined);
    let target: URL;
    try {
      target = new URL(location, url);
    } catch {
      throw new RedirectRefusedError(
        `The platform answered ${res.status} with an unreadable Location; the request was not repeated.`,
        undefined,
        ctx,
      );
    }
    if (target.origin !== url.origin) {
      throw new RedirectRefusedError(
        `The platform redirected (${res.status}) to another origin (${target.origin}); the client does not send the token and store id there.`,
        target.origin,
        ctx,
      );
    }
    if (hop >= MAX_REDIRECTS) {
      throw new RedirectRefusedError(
        `More than ${MAX_REDIRECTS} redirects; the request was abandoned.`,
        target.origin,
        ctx,
      );
    }
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
      delete headers['content-type'];
    }
    url = target;
  }
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
      res = await fetchSameOrigin(options.fetch, url, method, headers, body, combined, ctx);
    } catch (err) {
      if (err instanceof RedirectRefusedError) throw err;
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

  /**
   * One API call in a CLIENT span `{method} {url.template}` covering its
   * rate-limit waits, retries and replays (`http.request.resend_count`); each
   * 429 is an event on it and counted.
   */
  function call(
    method: HttpMethod,
    target: string | URL,
    opts: RequestOptions = {},
  ): Promise<unknown> {
    // An absolute URL (the session check) is named by its own path, not under {base_url}.
    const template = typeof target === 'string' ? null : target.pathname;
    const path = typeof target === 'string' ? target : target.pathname;
    return inSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        operation: 'api',
        rename: () => `${method} ${template ?? `${basePath.slice(0, -1)}${urlTemplate(path)}`}`,
        attributes: () => ({
          [ATTR.httpMethod]: method,
          [ATTR.urlTemplate]: template ?? `${basePath.slice(0, -1)}${urlTemplate(path)}`,
          [ATTR.storeId]: storeId,
          ...(baseUrl ? serverAttributes(baseUrl) : {}),
        }),
      },
      (span) => callOnce(method, target, opts, span),
    );
  }

  /**
   * One API call: paced sends until an answer ends it. Each answer is decided
   * by one of the steps below, which either ends the call (a value or an
   * error) or says to send again.
   */
  async function callOnce(
    method: HttpMethod,
    target: string | URL,
    opts: RequestOptions,
    span: Span,
  ): Promise<unknown> {
    if (!baseUrl) {
      throw new StoreApiError(
        'CLIENT_NOT_CONFIGURED',
        'The client has no baseUrl; pass platformUrl to storeApp() or baseUrl to the client.',
      );
    }
    const url =
      typeof target === 'string' ? buildUrl(baseUrl, basePath, target, opts.query) : target;
    const path = url.pathname;
    const c: CallPlan = {
      method,
      url,
      path,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      timeoutMs: opts.timeoutMs ?? options.timeoutMs,
      idempotent: method !== 'POST' && method !== 'PATCH',
      signal: opts.signal,
      ctx: { method, path },
      span,
      recording: span.isRecording(),
    };
    const state: CallState = { retries: 0, rateLimitRetries: 0, replayed: false, waitedMs: 0 };
    for (;;) {
      if (c.signal?.aborted) throw new AbortedError(c.ctx);
      // Looked up per attempt, never kept: the limiter may drop an idle gate (its
      // bound), and a kept one would then pace this store apart from the new one.
      const gate = limiter.forStore(storeId);
      const sent = await sendPaced(c, state, gate);
      if (sent === SEND_AGAIN) continue;
      const { raw, token } = sent;
      if (c.recording) {
        span.setAttributes({
          [ATTR.httpStatus]: raw.status,
          [ATTR.rateLimitWaitMs]: state.waitedMs,
          [ATTR.resendCount]: state.retries + state.rateLimitRetries + (state.replayed ? 1 : 0),
        });
      }
      if (raw.status >= 200 && raw.status < 300) {
        if (raw.status === 204 || raw.text.length === 0) return undefined;
        return parseJson(raw, { ...c.ctx, status: raw.status });
      }
      if (raw.status === 401) await after401(c, state, raw, token);
      else if (raw.status === 429) after429(c, state, raw, gate);
      else await afterFailure(c, state, raw);
    }
  }

  /**
   * Waits for the store's rate-limit slot, then sends with a current token.
   * A failure to get an answer (network, timeout, unreadable body) is retried
   * when that is safe (SEND_AGAIN after a backoff) or thrown.
   */
  async function sendPaced(
    c: CallPlan,
    state: CallState,
    gate: ReturnType<RateLimiter['forStore']>,
  ): Promise<{ raw: RawResponse; token: string } | typeof SEND_AGAIN> {
    let slot: Slot;
    const queuedAt = Date.now();
    try {
      slot = await gate.acquire(c.signal, options.maxRateLimitWaitMs - state.waitedMs);
    } catch (err) {
      // The store is held by a 429, or paced, for longer than this call may wait.
      if (err instanceof RateLimitedError) throw new RateLimitedError(err.retryAfter, c.ctx);
      throw err;
    }
    state.waitedMs += Date.now() - queuedAt;
    let raw: RawResponse;
    let token: string;
    try {
      token = await tokens.getAccessToken(storeId, c.signal);
      raw = await attempt(c.method, c.url, c.path, token, c.body, c.timeoutMs, c.signal);
    } catch (err) {
      slot.release();
      if (!(err instanceof StoreApiError)) throw err;
      const retryable =
        (err instanceof NetworkError && (c.idempotent || connectFailures.has(err))) ||
        (c.idempotent && (err instanceof TimeoutError || err instanceof ResponseInvalidError));
      if (retryable && state.retries < options.retries.max) {
        await sleep(backoff(state.retries++), c.signal);
        return SEND_AGAIN;
      }
      throw err;
    }
    slot.release(raw.headers);
    noticeDeprecation(raw.headers, c.method, c.path);
    return { raw, token };
  }

  /** A 401: a revoked or rotated token is replayed once with the current one; else thrown. */
  async function after401(
    c: CallPlan,
    state: CallState,
    raw: RawResponse,
    token: string,
  ): Promise<void> {
    const err = mapError(raw, c.method, c.path);
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
      if (!current && !state.replayed) {
        state.replayed = true;
        return;
      }
      throw new TokenRevokedError({ ...c.ctx, details: err.details, body: err.body });
    }
    if ((err.code === 'token_expired' || err.code === 'invalid_token') && !state.replayed) {
      // Another process may have rotated the token, or the platform's clock says expired
      // before ours does: refresh (single-flight) and replay once.
      state.replayed = true;
      await tokens.refreshRejected(storeId, token, c.signal);
      return;
    }
    if (err.code === 'token_expired') {
      throw new TokenExpiredError({ ...c.ctx, details: err.details, body: err.body });
    }
    throw err;
  }

  /**
   * A 429: the store's gate waits what the platform asked (never more than a
   * window); the call sends again when the caller's wait allows it and the
   * request provably did not run, else throws.
   */
  function after429(
    c: CallPlan,
    state: CallState,
    raw: RawResponse,
    gate: ReturnType<RateLimiter['forStore']>,
  ): void {
    countRateLimited();
    const now = Date.now();
    // Seconds, or an HTTP-date read against the response's own Date (one clock).
    const retryAfter = parseRetryAfter(
      raw.headers.get('retry-after'),
      responseDate(raw.headers) ?? now,
    );
    // No Retry-After: the window's reset in the platform's clock, else a backoff.
    const askedMs =
      retryAfter !== undefined && retryAfter > 0
        ? retryAfter * 1000
        : retryAfter === undefined
          ? (resetInMs(raw.headers) ?? backoff(state.rateLimitRetries))
          : backoff(state.rateLimitRetries);
    // A wait longer than a window is implausible for the contract: wait one window and ask again.
    const waitMs = Math.min(askedMs, WINDOW_MS);
    const reportSeconds = retryAfter ?? Math.ceil(waitMs / 1000);
    if (c.recording) c.span.addEvent(EVENT.rateLimited, { [ATTR.retryAfterS]: reportSeconds });
    gate.block(waitMs);
    const mapped = mapError(raw, c.method, c.path);
    const errorCtx = { ...c.ctx, details: mapped.details, body: mapped.body };
    if (!c.idempotent && !refusedByRateLimiter(raw, mapped)) {
      // Not provably refused before it ran (no rate-limit headers, another code): a POST
      // repeated blindly could create a second order. The caller decides.
      throw new RateLimitedError(reportSeconds, { ...errorCtx, mayHaveBeenApplied: true });
    }
    const within = state.waitedMs + waitMs <= options.maxRateLimitWaitMs;
    // A GET/PUT/DELETE waits out every 429 the caller's wait allows; a POST is bounded
    // by the retry count too.
    if (within && (c.idempotent || state.retries < options.retries.max)) {
      if (!c.idempotent) state.retries++;
      state.rateLimitRetries++;
      return;
    }
    throw new RateLimitedError(reportSeconds, errorCtx);
  }

  /** Any other answer: a 5xx of an idempotent call is retried after a backoff; else thrown. */
  async function afterFailure(c: CallPlan, state: CallState, raw: RawResponse): Promise<void> {
    if (raw.status >= 500 && c.idempotent && state.retries < options.retries.max) {
      await sleep(backoff(state.retries++), c.signal);
      return;
    }
    throw mapError(raw, c.method, c.path);
  }

  const sessionCheckUrl = options.sessionCheckUrl ? new URL(options.sessionCheckUrl) : undefined;
  return { storeId, call, sessionCheckUrl };
}

/**
 * The 429 is the platform's rate limiter refusing the request before it ran: its
 * machine code and its X-RateLimit-* headers (every platform response carries them).
 */
function refusedByRateLimiter(raw: RawResponse, mapped: StoreApiError): boolean {
  return (
    mapped.code === 'rate_limited' &&
    raw.headers.get('x-ratelimit-remaining') !== null &&
    raw.headers.get('x-ratelimit-reset') !== null
  );
}
