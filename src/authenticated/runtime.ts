/**
 * Builds the request-side runtime of a kit in one call (token manager, client
 * factory, session tokens, the launch verifier and watch), so the composition
 * only wires it.
 */
import { NotInstalledError } from '../client/errors.js';
import { createClientFactory } from '../client/factory.js';
import type { StoreApiClient } from '../client/index.js';
import type { ResolvedClientOptions } from '../client/options.js';
import type { PlatformClock } from '../client/platform-clock.js';
import type { ResolvedHttpOptions } from '../http/options.js';
import type { ResolvedAuthRouteOptions } from '../install/options.js';
import type { ResolvedOAuthOptions } from '../oauth/options.js';
import { requestToken } from '../oauth/token-endpoint.js';
import { createTokenManager, type RefreshLogger, type TokenManager } from '../refresh/manager.js';
import type { ResolvedRefreshOptions } from '../refresh/options.js';
import type { Storage } from '../storage/types.js';
import { createLaunchWatch, type LaunchWatch } from './launch-watch.js';
import type { ResolvedAuthenticatedOptions } from './options.js';
import {
  createLaunchVerifier,
  createSessionTokens,
  LAUNCH_CLAIM_NAMESPACE,
  type LaunchVerifier,
  type SessionTokenIssuer,
} from './session-token.js';

/** The pino logger fits. */
export type RuntimeLogger = RefreshLogger;

export interface ApiRuntime {
  tokens: TokenManager;
  /** `kit.client(storeId)`. */
  client(storeId: string): StoreApiClient;
  /** `kit.sessionToken(storeId)`: an app session token for the embedded frontend. */
  sessionToken(storeId: string): Promise<{ token: string; expiresAt: Date }>;
  /** The app session token issuer (the Fetch shell's `kit.authenticate` verifies with it). */
  sessionTokens: SessionTokenIssuer;
  /** After a purge or a reinstall: drop cached installation and client. */
  forget(storeId: string): void;
  /** Starts the background sweep. */
  start(): void;
  /** Stops the sweep and waits for a running pass. */
  close(): Promise<void>;
  /** Embedded apps: notices admin launches answered without `authenticated()`. */
  launchWatch?: LaunchWatch;
  /** Embedded apps: the launch token's parameter and its (single-use) verifier, for both shells. */
  launch?: { param: string; verifier: LaunchVerifier };
}

/** The resolved settings the runtime reads (a slice of the kit's configuration). */
export interface ApiRuntimeConfig {
  appUrl: string;
  oauth: ResolvedOAuthOptions;
  auth: Pick<ResolvedAuthRouteOptions, 'beginUrl' | 'narrowerScopes'>;
  session: Pick<ResolvedHttpOptions['session'], 'secret' | 'maxAgeSeconds'>;
  embedded: Pick<ResolvedHttpOptions['embedded'], 'enabled' | 'launchParam'>;
  client: ResolvedClientOptions;
  refresh: ResolvedRefreshOptions;
  authenticated: ResolvedAuthenticatedOptions;
}

export function createApiRuntime(
  config: ApiRuntimeConfig,
  deps: {
    /** `claimOnce` makes launch tokens single-use across instances on one database. */
    storage: Pick<Storage, 'installations'> & Partial<Pick<Storage, 'claimOnce'>>;
    logger?: RuntimeLogger;
    /** @default globalThis.fetch */
    fetch?: typeof fetch;
    /** The platform's clock (token expiries), fed by the token endpoint's and the API's answers. */
    platformClock?: PlatformClock;
  },
): ApiRuntime {
  const { platformClock } = deps;
  let clients: ReturnType<typeof createClientFactory> | undefined;
  const tokens = createTokenManager({
    installations: deps.storage.installations,
    options: config.refresh,
    logger: deps.logger,
    refresh: async (refreshToken, signal) => {
      const sentAt = Date.now();
      const token = await requestToken(
        {
          url: config.oauth.refreshUrl,
          clientId: config.oauth.clientId,
          clientSecret: config.oauth.clientSecret,
          encoding: config.oauth.tokenRequestEncoding,
        },
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { signal, timeoutMs: config.oauth.tokenTimeoutMs, fetch: deps.fetch },
      );
      platformClock?.observe(token.serverDate?.getTime(), sentAt, Date.now());
      return token;
    },
    ...(platformClock ? { platformNow: () => platformClock.now() } : {}),
    // token_revoked flags the installation (needs re-authorisation); it never purges.
    onRevoked: (storeId) => {
      clients?.forget(storeId);
    },
  });
  clients = createClientFactory({
    options: deps.fetch ? { ...config.client, fetch: deps.fetch } : config.client,
    tokens,
    logger: deps.logger,
    platformClock,
  });
  const sessionTokens = createSessionTokens({
    secrets: config.session.secret,
    clientId: config.oauth.clientId,
    issuer: config.appUrl,
    ttlSeconds: config.authenticated.sessionTokenTtlSeconds,
    clockToleranceSeconds: config.authenticated.clockToleranceSeconds,
    // One absolute lifetime for the merchant's session, cookie or token.
    maxSessionAgeSeconds: config.session.maxAgeSeconds,
    rememberedTokens: config.authenticated.rememberedTokens,
  });
  const claimOnce = deps.storage.claimOnce?.bind(deps.storage);
  const launch = config.embedded.enabled
    ? {
        param: config.embedded.launchParam,
        verifier: createLaunchVerifier({
          clientSecret: config.oauth.clientSecret,
          clientId: config.oauth.clientId,
          issuer: config.oauth.authUrl,
          clockToleranceSeconds: config.authenticated.clockToleranceSeconds,
          claim: claimOnce
            ? (jti, expiresAt) => claimOnce(LAUNCH_CLAIM_NAMESPACE, jti, expiresAt)
            : undefined,
        }),
      }
    : undefined;
  const launchWatch = launch
    ? createLaunchWatch({ param: launch.param, logger: deps.logger })
    : undefined;
  const factory = clients;
  return {
    tokens,
    client: (storeId) => factory.forStore(storeId),
    async sessionToken(storeId) {
      // Bound to the current installation: a token never outlives an uninstall. Read
      // without refreshing: minting needs the installation, not a live access token.
      const installation =
        tokens.cachedInstallation(storeId) ?? (await deps.storage.installations.get(storeId));
      if (!installation) throw new NotInstalledError(storeId);
      return sessionTokens.mint(storeId, { installedAt: installation.installedAt.getTime() });
    },
    sessionTokens,
    forget(storeId) {
      tokens.invalidate(storeId);
      factory.forget(storeId);
    },
    launchWatch,
    launch,
    start: () => tokens.startSweep(),
    async close() {
      await tokens.stopSweep();
      // Pairs the platform rotated but the database refused: one last write before storage closes.
      await tokens.flushPendingWrites();
    },
  };
}
