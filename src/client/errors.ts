/**
 * Errors of the platform API client. Every one extends StoreApiError (itself a
 * StoreAppError) and carries status, code, details, method and path (never the
 * query string, never a token).
 */
import { type ErrorContext, StoreAppError } from '../errors/index.js';

export const API_ERROR = 'API_ERROR' as const;
export const VALIDATION_ERROR = 'VALIDATION_ERROR' as const;
export const NOT_FOUND = 'NOT_FOUND' as const;
export const CONFLICT = 'CONFLICT' as const;
export const INSUFFICIENT_SCOPE = 'insufficient_scope' as const;
export const TOKEN_EXPIRED = 'token_expired' as const;
export const TOKEN_REVOKED = 'token_revoked' as const;
export const RATE_LIMITED = 'rate_limited' as const;
export const REAUTHORIZATION_REQUIRED = 'REAUTHORIZATION_REQUIRED' as const;
export const RESPONSE_INVALID = 'RESPONSE_INVALID' as const;
export const NETWORK_ERROR = 'NETWORK_ERROR' as const;
export const TIMEOUT = 'TIMEOUT' as const;
export const ABORTED = 'ABORTED' as const;
export const NOT_INSTALLED = 'NOT_INSTALLED' as const;
export const REDIRECT_REFUSED = 'REDIRECT_REFUSED' as const;

/** One item of the API error body's `details` array. */
export interface ErrorDetail {
  field?: string;
  message?: string;
  [key: string]: unknown;
}

export interface ApiErrorContext extends ErrorContext {
  details?: ErrorDetail[];
  /** The parsed error body, kept for codes the kit does not model. */
  body?: unknown;
}

/**
 * Any failure of a platform API call. `code` is the platform's machine code when it
 * sent one (e.g. `INSUFFICIENT_STOCK`, `INVALID_TRANSITION`), else one of ours.
 */
export class StoreApiError<C extends string = string> extends StoreAppError<C> {
  readonly details: ErrorDetail[];
  readonly body: unknown;
  constructor(code: C, message: string, context: ApiErrorContext = {}) {
    super(code, message, context);
    this.details = context.details ?? [];
    this.body = context.body;
  }
}

/** 422: the platform rejected the payload; `fields` names each field at fault. */
export class ValidationError extends StoreApiError<typeof VALIDATION_ERROR> {
  /** Field name → message, from `details`. */
  readonly fields: Record<string, string>;
  constructor(message: string, context: ApiErrorContext = {}) {
    super(VALIDATION_ERROR, message, { status: 422, ...context });
    this.fields = {};
    for (const d of this.details) {
      if (typeof d.field === 'string') this.fields[d.field] = String(d.message ?? 'invalid');
    }
  }
}

export class NotFoundError extends StoreApiError<typeof NOT_FOUND> {
  constructor(message: string, context: ApiErrorContext = {}) {
    super(NOT_FOUND, message, { status: 404, ...context });
  }
}

/** 409: a conflict; `platformCode` keeps the platform's finer code (e.g. INSUFFICIENT_STOCK). */
export class ConflictError extends StoreApiError<typeof CONFLICT> {
  readonly platformCode: string;
  constructor(message: string, platformCode: string, context: ApiErrorContext = {}) {
    super(CONFLICT, message, { status: 409, ...context });
    this.platformCode = platformCode;
  }
}

/** 403 insufficient_scope: the installation lacks `requiredScope`; reinstall with it. */
export class InsufficientScopeError extends StoreApiError<typeof INSUFFICIENT_SCOPE> {
  readonly requiredScope: string | undefined;
  constructor(requiredScope: string | undefined, context: ApiErrorContext = {}) {
    super(
      INSUFFICIENT_SCOPE,
      requiredScope
        ? `The installation lacks scope "${requiredScope}"; add it to the app's scopes and have the merchant reinstall.`
        : 'The installation lacks a scope this endpoint needs; have the merchant reinstall.',
      { status: 403, ...context },
    );
    this.requiredScope = requiredScope;
  }
}

/** 401 token_expired that could not be cured by one refresh and replay. */
export class TokenExpiredError extends StoreApiError<typeof TOKEN_EXPIRED> {
  constructor(context: ApiErrorContext = {}) {
    super(TOKEN_EXPIRED, 'The access token expired and a refresh did not cure it.', {
      status: 401,
      ...context,
    });
  }
}

/**
 * 401 token_revoked: the platform revoked the grant (an uninstall, or a
 * revocation). The installation is flagged as needing re-authorisation and its
 * data is kept; later calls throw ReauthorizationRequiredError until the
 * merchant installs again. Data goes only with a verified app.uninstalled
 * webhook or kit.purge().
 */
export class TokenRevokedError extends StoreApiError<typeof TOKEN_REVOKED> {
  constructor(context: ApiErrorContext = {}) {
    super(
      TOKEN_REVOKED,
      'The platform revoked the token; the installation now needs re-authorisation: send the merchant through /auth. No data was deleted.',
      { status: 401, ...context },
    );
  }
}

/**
 * 429 that outlasted what the call may wait (`maxRateLimitWaitMs`), or a 429 to a
 * POST/PATCH that the client may not repeat on its own (`mayHaveBeenApplied`: the
 * answer did not show the platform's rate limiter refusing it before doing anything;
 * check whether it took effect before sending it again). `retryAfter` is in seconds.
 */
export class RateLimitedError extends StoreApiError<typeof RATE_LIMITED> {
  readonly retryAfter: number;
  readonly mayHaveBeenApplied: boolean;
  constructor(
    retryAfter: number,
    context: ApiErrorContext & { mayHaveBeenApplied?: boolean } = {},
  ) {
    const { mayHaveBeenApplied = false, ...rest } = context;
    super(
      RATE_LIMITED,
      mayHaveBeenApplied
        ? `Rate limited (429) without the platform's rate-limit headers; the ${rest.method ?? 'request'} was not repeated because it may have been applied. Check before sending it again.`
        : `Rate limited by the platform; retry after ${retryAfter} s.`,
      { status: 429, ...rest },
    );
    this.retryAfter = retryAfter;
    this.mayHaveBeenApplied = mayHaveBeenApplied;
  }
}

/**
 * The platform answered with a redirect the client will not follow: to another
 * origin (the bearer token and X-Store-Id would go along), or too many hops.
 * `location` holds the target's origin only.
 */
export class RedirectRefusedError extends StoreApiError<typeof REDIRECT_REFUSED> {
  readonly location: string | undefined;
  constructor(message: string, location: string | undefined, context: ApiErrorContext = {}) {
    super(REDIRECT_REFUSED, message, { status: 502, ...context });
    this.location = location;
  }
}

/** The installation needs the merchant to install again (refresh failed for good, or scopes grew). */
export class ReauthorizationRequiredError extends StoreApiError<typeof REAUTHORIZATION_REQUIRED> {
  readonly storeId: string;
  constructor(storeId: string, message?: string, context: ApiErrorContext = {}) {
    super(
      REAUTHORIZATION_REQUIRED,
      message ?? 'The installation must be authorised again: send the merchant through /auth.',
      { status: 401, ...context },
    );
    this.storeId = storeId;
  }
}

/** No installation for the store (never installed, or purged after uninstall). */
export class NotInstalledError extends StoreApiError<typeof NOT_INSTALLED> {
  readonly storeId: string;
  constructor(storeId: string, context: ApiErrorContext = {}) {
    super(
      NOT_INSTALLED,
      'The app is not installed on this store; send the merchant through /auth.',
      {
        status: 401,
        ...context,
      },
    );
    this.storeId = storeId;
  }
}

/** The platform's response could not be used: HTML, malformed JSON, no `data`, a cut body. */
export class ResponseInvalidError extends StoreApiError<typeof RESPONSE_INVALID> {
  constructor(message: string, context: ApiErrorContext = {}) {
    super(RESPONSE_INVALID, message, { status: 502, ...context });
  }
}

/** The request did not complete: connection refused or reset, DNS failure. */
export class NetworkError extends StoreApiError<typeof NETWORK_ERROR> {
  constructor(message: string, context: ApiErrorContext = {}) {
    super(NETWORK_ERROR, message, { status: 502, ...context });
  }
}

export class TimeoutError extends StoreApiError<typeof TIMEOUT> {
  constructor(timeoutMs: number, context: ApiErrorContext = {}) {
    super(TIMEOUT, `The platform did not answer within ${timeoutMs} ms.`, {
      status: 504,
      ...context,
    });
  }
}

/** The caller's AbortSignal fired. */
export class AbortedError extends StoreApiError<typeof ABORTED> {
  constructor(context: ApiErrorContext = {}) {
    super(ABORTED, 'The request was aborted by the caller.', context);
  }
}
