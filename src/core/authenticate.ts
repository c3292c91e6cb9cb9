/**
 * `authenticated()` for a bearer app session token, without a framework: the
 * token's store, its installation (the one the token was minted for), the
 * required scopes, then the store context, or the JSON answer a fetch/XHR
 * call gets when the app cannot act for the store (the same codes and
 * re-authorise header as the Express `kit.authenticated()`).
 */

import { SCOPES_CHANGED, SESSION_TOKEN_INVALID } from '../authenticated/errors.js';
import type { AuthenticatedStore } from '../authenticated/index.js';
import { SessionTokenError, type SessionTokenIssuer } from '../authenticated/session-token.js';
import { NotInstalledError, ReauthorizationRequiredError } from '../client/errors.js';
import type { StoreApiClient } from '../client/index.js';
import { StorageError, StoreAppError } from '../errors/index.js';
import { RefreshClientRejectedError } from '../refresh/errors.js';
import type { TokenManager } from '../refresh/manager.js';
import { type CoreResponse, respond } from './http.js';

export interface BearerAuthDeps {
  sessionTokens: Pick<SessionTokenIssuer, 'verifySession' | 'mint'>;
  tokens: Pick<TokenManager, 'getInstallation' | 'reload'>;
  client(storeId: string): StoreApiClient;
  scopes: readonly string[];
  narrowerScopes: 'refuse' | 'record';
  /** Absolute URL of the install begin route. */
  beginUrl: string;
  /** The header naming where to re-authorise (`authenticated.reauthorizeHeader`). */
  reauthorizeHeader: string;
}

/** The store context, or the response to send instead. */
export type BearerDecision =
  | { ok: true; store: AuthenticatedStore }
  | { ok: false; response: CoreResponse };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Authenticates an `Authorization` header value carrying an app session token. */
export function createBearerAuthenticate(deps: BearerAuthDeps) {
  const reauthorize = (storeId: string | undefined, code: string, message: string) => {
    const url = new URL(deps.beginUrl);
    if (storeId) url.searchParams.set('store_id', storeId);
    const headers = { 'cache-control': 'no-store', [deps.reauthorizeHeader]: url.toString() };
    return { ok: false as const, response: respond.json(401, { code, message }, headers) };
  };
  const invalid = (code: string, message: string) => ({
    ok: false as const,
    response: respond.json(
      401,
      { code, message },
      { 'cache-control': 'no-store', 'www-authenticate': 'Bearer error="invalid_token"' },
    ),
  });

  async function storeOf(storeId: string, installedAt: number, authTime: number) {
    let installation = await deps.tokens.getInstallation(storeId);
    // The memory copy may predate a reinstall in another process; ask the database.
    if (installation.installedAt.getTime() !== installedAt) {
      installation = await deps.tokens.reload(storeId);
    }
    if (installation.installedAt.getTime() !== installedAt) {
      return reauthorize(
        storeId,
        SESSION_TOKEN_INVALID,
        'The app session token belongs to an earlier installation of this store; open the app from the store admin again.',
      );
    }
    let missing = deps.scopes.filter((s) => !installation.scopes.includes(s));
    if (missing.length > 0) {
      installation = await deps.tokens.reload(storeId);
      missing = deps.scopes.filter((s) => !installation.scopes.includes(s));
    }
    if (missing.length > 0 && deps.narrowerScopes !== 'record') {
      return reauthorize(
        storeId,
        SCOPES_CHANGED,
        `The app now needs scopes the merchant has not granted (${missing.join(', ')}); authorise again.`,
      );
    }
    const store: AuthenticatedStore = {
      storeId,
      scopes: installation.scopes,
      missingScopes: missing,
      client: deps.client(storeId),
      // A renewal keeps the session's start: it cannot outlive the session.
      sessionToken: () => deps.sessionTokens.mint(storeId, { installedAt, authTime }),
    };
    return { ok: true as const, store };
  }

  return async function authenticateBearer(
    authorization: string | undefined,
  ): Promise<BearerDecision> {
    const m = BEARER.exec(authorization ?? '');
    if (!m?.[1]) {
      return invalid(
        SESSION_TOKEN_INVALID,
        'The Authorization header must be "Bearer <app session token>".',
      );
    }
    let storeId: string | undefined;
    try {
      const session = await deps.sessionTokens.verifySession(m[1]);
      storeId = session.storeId;
      return await storeOf(session.storeId, session.installedAt, session.authTime);
    } catch (err) {
      if (err instanceof SessionTokenError) return invalid(err.code, err.message);
      if (err instanceof NotInstalledError || err instanceof ReauthorizationRequiredError) {
        return reauthorize(storeId, err.code, err.message);
      }
      return { ok: false, response: failure(err) };
    }
  };
}

/** A store the app cannot reach (503) or credentials the platform refused (500). */
function failure(err: unknown): CoreResponse {
  const headers = { 'cache-control': 'no-store' };
  if (err instanceof RefreshClientRejectedError) {
    const message =
      "The store platform did not accept this app's credentials. Nothing was lost; the app's developer has to correct its configuration.";
    return respond.json(500, { code: err.code, message }, headers);
  }
  if (err instanceof StoreAppError && (err.status === 503 || err instanceof StorageError)) {
    return respond.json(
      503,
      {
        code: err.code,
        message: 'The app cannot reach its storage or the platform right now; try again shortly.',
      },
      { ...headers, 'retry-after': '5' },
    );
  }
  throw err;
}
