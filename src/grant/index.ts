/**
 * The platform's session check, put to use: `kit.checkGrant(storeId)` asks the
 * platform what a store's access token grants and compares it with what the kit
 * stored, and every install is confirmed this way in the background, so an
 * operator hears at the first install (not at the first merchant complaint)
 * that the session check path is wrong for their platform, or that the grant
 * is not what the token response said.
 *
 * Nothing here deletes or rewrites data: a revoked grant is reported (the client
 * already flags the installation for re-authorisation), never purged.
 */
import type { Logger } from 'pino';
import {
  NotFoundError,
  NotInstalledError,
  ReauthorizationRequiredError,
  StoreApiError,
  TokenRevokedError,
} from '../client/errors.js';
import type { StoreApiClient } from '../client/index.js';
import { missingScopes } from '../oauth/scopes.js';

/** What the platform's session check says of a store's grant, beside what the kit stored. */
export type GrantCheck =
  | {
      /** The platform confirms the grant for this store. */
      status: 'active';
      storeId: string;
      appId: string;
      /** Scopes the platform says the token grants. */
      scopes: string[];
      /** The token's expiry in the platform's clock, as the platform wrote it (not compared with ours). */
      expiresAt: string;
      /** Scopes the app's configuration requires that the grant lacks (empty when none). */
      missingScopes: string[];
      /** True when the platform's scopes differ from those the kit stored from the token response. */
      storedScopesDiffer: boolean;
    }
  | {
      /** The token answers for another store: the stored grant must not be used. */
      status: 'store_mismatch';
      storeId: string;
      /** The store the platform named. */
      platformStoreId: string;
    }
  | {
      /** The platform revoked the grant (the installation is flagged; no data deleted). */
      status: 'revoked';
      storeId: string;
    }
  | {
      /** The installation is already flagged: the merchant must install again. */
      status: 'reauthorization_required';
      storeId: string;
    }
  | {
      /** No installation is stored for the store. */
      status: 'not_installed';
      storeId: string;
    };

export interface GrantCheckDeps {
  client: (storeId: string) => StoreApiClient;
  storedScopes: (storeId: string) => Promise<string[] | undefined>;
  requiredScopes: readonly string[];
  /** Where the session check goes (for messages): the `oauth.sessionCheckPath` in use. */
  sessionCheckUrl: string;
  logger: Logger;
}

export interface GrantChecker {
  /** Asks the platform's session check about a store's grant. Throws only on transport trouble. */
  check(storeId: string): Promise<GrantCheck>;
  /** Confirms a fresh install in the background; the outcome goes to the log. */
  confirmInstall(storeId: string): void;
  /** Waits for background confirmations (on kit.close()). */
  close(): Promise<void>;
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && missingScopes({ scopes: a }, b).length === 0;

export function createGrantChecker(deps: GrantCheckDeps): GrantChecker {
  const inFlight = new Set<Promise<void>>();
  let closed = false;

  async function check(storeId: string): Promise<GrantCheck> {
    let info: Awaited<ReturnType<StoreApiClient['session']>>;
    try {
      info = await deps.client(storeId).session();
    } catch (err) {
      if (err instanceof TokenRevokedError) return { status: 'revoked', storeId };
      if (err instanceof ReauthorizationRequiredError) {
        return { status: 'reauthorization_required', storeId };
      }
      if (err instanceof NotInstalledError) return { status: 'not_installed', storeId };
      if (err instanceof NotFoundError) {
        throw new StoreApiError(
          'SESSION_CHECK_NOT_FOUND',
          `The platform answered 404 to the session check at ${new URL(deps.sessionCheckUrl).pathname}: set oauth.sessionCheckPath to the platform's session check path.`,
          { status: 404, method: 'GET', path: new URL(deps.sessionCheckUrl).pathname },
        );
      }
      throw err;
    }
    if (info.store_id !== storeId) {
      return { status: 'store_mismatch', storeId, platformStoreId: info.store_id };
    }
    const stored = (await deps.storedScopes(storeId)) ?? [];
    return {
      status: 'active',
      storeId,
      appId: info.app_id,
      scopes: [...info.scopes],
      expiresAt: info.expires_at,
      missingScopes: missingScopes({ scopes: info.scopes }, deps.requiredScopes),
      storedScopesDiffer: !sameSet(stored, info.scopes),
    };
  }

  function report(result: GrantCheck): void {
    const log = deps.logger.child({ storeId: result.storeId });
    switch (result.status) {
      case 'active':
        if (result.missingScopes.length > 0 || result.storedScopesDiffer) {
          log.warn(
            { missingScopes: result.missingScopes, granted: result.scopes },
            "install: the platform's session check grants other scopes than the token response named; routes that need a missing scope will send the merchant through /auth again",
          );
        } else {
          log.debug('install: grant confirmed by the session check');
        }
        return;
      case 'store_mismatch':
        log.error(
          { platformStoreId: result.platformStoreId },
          "install: the platform's session check names another store for this store's token; check the platform's callback and token endpoints",
        );
        return;
      default:
        log.warn({ status: result.status }, 'install: the grant could not be confirmed');
    }
  }

  return {
    check,
    confirmInstall(storeId) {
      if (closed) return;
      const run = check(storeId).then(report, (err: unknown) => {
        deps.logger.warn(
          {
            storeId,
            errorCode: err instanceof StoreApiError ? err.code : undefined,
            status: err instanceof StoreApiError ? err.status : undefined,
          },
          err instanceof StoreApiError && err.code === 'SESSION_CHECK_NOT_FOUND'
            ? err.message
            : 'install: the session check could not confirm the grant (the install is kept)',
        );
      });
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    },
    async close() {
      closed = true;
      await Promise.allSettled([...inFlight]);
    },
  };
}
