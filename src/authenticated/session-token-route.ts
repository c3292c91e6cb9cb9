/**
 * `GET {auth.path}/session-token` without a framework: a cookie-authenticated
 * page swaps its session for `{ token, expiresAt }` (an app session token for
 * `Authorization: Bearer`), never cached.
 */
import { type CoreHandler, type CoreRequest, type CoreResponse, respond } from '../core/http.js';
import type { AuthDecision, AuthenticatedStore } from './authenticate.js';
import { SessionTokenError } from './session-token.js';

/** The session-token answer for an authenticated store; rethrows what is not a token refusal. */
export async function sessionTokenResponse(store: AuthenticatedStore): Promise<CoreResponse> {
  try {
    const { token, expiresAt } = await store.sessionToken();
    return respond.json(
      200,
      { token, expiresAt: expiresAt.toISOString() },
      { 'cache-control': 'no-store' },
    );
  } catch (err) {
    if (!(err instanceof SessionTokenError)) throw err;
    // The session ended (its absolute lifetime): the merchant opens the app again.
    return respond.json(
      401,
      { code: err.code, message: err.message },
      { 'cache-control': 'no-store' },
    );
  }
}

/** The session-token route as a core handler behind `authenticate`. */
export function createSessionTokenRoute(
  authenticate: (req: CoreRequest) => Promise<AuthDecision>,
): CoreHandler {
  return async function sessionTokenRoute(req) {
    const decision = await authenticate(req);
    return decision.ok ? sessionTokenResponse(decision.store) : decision.response;
  };
}
