/**
 * The install callback as data: every way it can end is one `CallbackOutcome`,
 * decided by pure functions (`decideCallback` before any effect, `checkStoreMatch`
 * after the state claim, `checkGrant` after the token exchange) or by the
 * effectful steps of ./callback.ts. `CALLBACK_OUTCOMES` is the table a shell
 * answers from: status, error code, and what happens to the pending-install
 * cookie. Nothing here reads a clock, a database or a request.
 */
import { isStoreId } from '../core/store-id.js';
import { INSTALL_ERROR_CODES as E, type InstallErrorCode } from './errors.js';
import type { PendingInstall } from './pending-cookie.js';

/** How a callback ended. `storeId`: the store the "try again" link begins for. */
export type CallbackOutcome =
  | { kind: 'malformed' }
  | { kind: 'platform_error'; error: string; storeId: string | null }
  | { kind: 'missing_params'; storeId: string | null }
  | { kind: 'store_id_invalid' }
  | { kind: 'binding_missing'; storeId: string | null }
  | { kind: 'state_invalid'; storeId: string | null }
  | { kind: 'rate_limited'; retryAfterSeconds: number; storeId: string | null }
  | { kind: 'storage_down'; storeId: string | null; err: unknown; binding: 'keep' | 'update' }
  | { kind: 'store_mismatch'; storeId: string | null }
  | { kind: 'code_replayed'; storeId: string | null }
  | { kind: 'restart'; entry: PendingInstall }
  | { kind: 'code_rejected'; storeId: string | null }
  | { kind: 'client_rejected' }
  | { kind: 'exchange_failed'; storeId: string | null }
  | { kind: 'inconsistent_store'; storeId: string | null }
  | { kind: 'scopes_refused'; storeId: string; missingScopes: string[] }
  | { kind: 'before_hook_failed'; storeId: string }
  | { kind: 'after_hook_failed'; storeId: string }
  | { kind: 'installed'; location: string };

export type CallbackOutcomeKind = CallbackOutcome['kind'];

/**
 * One row of the table. `binding`: `keep` leaves the pending-install cookie as it
 * is (the same install may come back), `update` drops this install from it (other
 * tabs' installs stay), `restart` adds a fresh attempt in its place.
 */
export interface CallbackOutcomeRow {
  status: number;
  code: InstallErrorCode | null;
  binding: 'keep' | 'update' | 'restart';
}

/** Every outcome's answer; `satisfies` makes a new outcome without a row a type error. */
export const CALLBACK_OUTCOMES = {
  malformed: { status: 400, code: E.REQUEST_INVALID, binding: 'keep' },
  platform_error: { status: 400, code: E.PLATFORM_ERROR, binding: 'update' },
  missing_params: { status: 400, code: E.REQUEST_INVALID, binding: 'keep' },
  store_id_invalid: { status: 400, code: E.STORE_ID_INVALID, binding: 'keep' },
  binding_missing: { status: 400, code: E.BINDING_MISSING, binding: 'keep' },
  state_invalid: { status: 400, code: E.STATE_INVALID, binding: 'update' },
  rate_limited: { status: 429, code: E.RATE_LIMITED, binding: 'keep' },
  storage_down: { status: 503, code: E.STORAGE_UNAVAILABLE, binding: 'keep' },
  store_mismatch: { status: 400, code: E.STORE_MISMATCH, binding: 'update' },
  code_replayed: { status: 400, code: E.CODE_REPLAYED, binding: 'update' },
  restart: { status: 302, code: null, binding: 'restart' },
  code_rejected: { status: 400, code: E.CODE_REJECTED, binding: 'update' },
  client_rejected: { status: 500, code: E.CLIENT_REJECTED, binding: 'update' },
  exchange_failed: { status: 502, code: E.TOKEN_EXCHANGE_FAILED, binding: 'update' },
  inconsistent_store: { status: 502, code: E.TOKEN_EXCHANGE_FAILED, binding: 'update' },
  scopes_refused: { status: 403, code: E.SCOPES_NOT_GRANTED, binding: 'update' },
  before_hook_failed: { status: 500, code: E.HOOK_FAILED, binding: 'update' },
  after_hook_failed: { status: 500, code: E.HOOK_FAILED, binding: 'update' },
  installed: { status: 302, code: null, binding: 'update' },
} as const satisfies Record<CallbackOutcomeKind, CallbackOutcomeRow>;

/** The row of an outcome; the two that depend on their data are resolved here. */
export function outcomeRow(o: CallbackOutcome): CallbackOutcomeRow {
  if (o.kind === 'platform_error' && o.error === 'access_denied') {
    return { status: 403, code: E.ACCESS_DENIED, binding: 'update' };
  }
  if (o.kind === 'storage_down') return { ...CALLBACK_OUTCOMES.storage_down, binding: o.binding };
  return CALLBACK_OUTCOMES[o.kind];
}

/** What the callback knows before it touches anything. */
export interface CallbackInput {
  /** Single-valued query, or null when it was malformed (see `readQuery`). */
  query: Record<string, string> | null;
  /** The request carried a pending-install cookie at all. */
  hasBindingCookie: boolean;
  /** The cookie's entry for the query's state, if any (found in constant time). */
  entry: PendingInstall | undefined;
}

/** Go on with the claims and the exchange. */
export interface CallbackProceed {
  kind: 'proceed';
  code: string;
  entry: PendingInstall;
  /** The callback's store_id when valid, else null. */
  queryStore: string | null;
}

/** The outcome decided from the request alone, or `proceed`. */
export function decideCallback(input: CallbackInput): CallbackOutcome | CallbackProceed {
  const q = input.query;
  if (q === null) return { kind: 'malformed' };
  const queryStore = isStoreId(q.store_id) ? q.store_id : null;
  if (q.error !== undefined) {
    const error = /^[a-z_]{1,64}$/.test(q.error) ? q.error : 'unknown_error';
    return { kind: 'platform_error', error, storeId: input.entry?.storeId ?? queryStore };
  }
  if (!q.state || !q.code) return { kind: 'missing_params', storeId: queryStore };
  if (q.store_id !== undefined && queryStore === null) return { kind: 'store_id_invalid' };
  // No cookie at all: begun elsewhere (or the browser dropped it). A cookie whose
  // entries expired or do not match the state is the state's fault.
  if (!input.hasBindingCookie) return { kind: 'binding_missing', storeId: queryStore };
  if (!input.entry) return { kind: 'state_invalid', storeId: queryStore };
  return { kind: 'proceed', code: q.code, entry: input.entry, queryStore };
}

/** After the state claim: the callback's store must be the one the install began for. */
export function checkStoreMatch(
  entry: PendingInstall,
  queryStore: string | null,
): CallbackOutcome | null {
  if (entry.storeId !== null && queryStore !== entry.storeId) {
    return { kind: 'store_mismatch', storeId: entry.storeId };
  }
  return null;
}

/** What the token response granted, as the callback stores it. */
export interface Grant {
  storeId: string;
  scopes: string[];
  missingScopes: string[];
}

/**
 * After the exchange: which store the tokens are for, and whether the grant
 * is the one the app asked for. A narrower grant is never stored as if it
 * were the install the app asked for (`narrowerScopes: 'refuse'`).
 */
export function checkGrant(
  token: { storeId: string | null; scopes: string[]; scopeMissing: boolean },
  ctx: {
    queryStore: string | null;
    retryStore: string | null;
    requested: readonly string[];
    narrowerScopes: 'refuse' | 'record';
  },
): CallbackOutcome | Grant {
  const storeId = token.storeId ?? ctx.queryStore;
  if (!isStoreId(storeId) || (ctx.queryStore !== null && storeId !== ctx.queryStore)) {
    return { kind: 'inconsistent_store', storeId: ctx.retryStore };
  }
  // RFC 6749 §5.1: no scope in the response means the requested scope was granted.
  const scopes = token.scopeMissing ? [...ctx.requested] : token.scopes;
  const missingScopes = ctx.requested.filter((s) => !scopes.includes(s));
  if (missingScopes.length > 0 && ctx.narrowerScopes === 'refuse') {
    return { kind: 'scopes_refused', storeId, missingScopes };
  }
  return { storeId, scopes, missingScopes };
}
