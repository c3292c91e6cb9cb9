/**
 * Test fixture for the client, refresh and authenticated() suites: a real
 * local platform over a real socket, an app registered on it, a store
 * installed through the real OAuth flow (authorize URL → approve → token
 * exchange), and the installation stored in real storage (SQLite file or
 * Postgres).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClientFactory } from '../../src/client/factory.js';
import type { StoreApiClient } from '../../src/client/index.js';
import { type ClientOptions, resolveClientOptions } from '../../src/client/options.js';
import { requestToken } from '../../src/oauth/token-endpoint.js';
import { type Platform, type PlatformOptions, startPlatform } from '../../src/platform/index.js';
import { SCOPE_NAMES } from '../../src/platform/scopes.js';
import { createTokenManager, type TokenManager } from '../../src/refresh/manager.js';
import { type RefreshOptions, resolveRefreshOptions } from '../../src/refresh/options.js';
import { createStorage } from '../../src/storage/index.js';
import type { Installation, Storage } from '../../src/storage/types.js';

/** Every scope an endpoint of the platform document needs (no endpoint needs manage_*). */
export const ALL_SCOPES = SCOPE_NAMES.filter((s) => !s.startsWith('manage_'));

export interface Fixture {
  platform: Platform;
  storage: Storage;
  databaseUrl: string;
  encryptionKey: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /**
   * Installs a new store (seeded with `seed` products) and stores its tokens; with
   * `storeId`, installs that existing store again (a reinstall).
   */
  install(options?: {
    seed?: boolean | number;
    scopes?: string[];
    storeId?: string;
  }): Promise<Installation>;
  /** A token manager + client factory on this storage. */
  runtime(options?: {
    refresh?: RefreshOptions;
    client?: ClientOptions;
    onRevoked?: (storeId: string) => Promise<unknown> | unknown;
    now?: () => number;
  }): { tokens: TokenManager; client(storeId: string): StoreApiClient };
  refreshCalls(): number;
  close(): Promise<void>;
}

export async function createFixture(
  options: {
    platform?: PlatformOptions;
    databaseUrl?: string;
    scopes?: string[];
    rateLimit?: { perMinute?: number | null; concurrent?: number };
    /** The kit's clock (tests that move the platform clock move this one too). */
    now?: () => number;
  } = {},
): Promise<Fixture> {
  const clock = options.now ?? Date.now;
  const platform = await startPlatform(options.platform);
  const dir = mkdtempSync(join(tmpdir(), 'sak-client-'));
  const databaseUrl = options.databaseUrl ?? `file:${join(dir, 'app.db')}`;
  const encryptionKey = randomBytes(32).toString('base64url');
  const storage = await createStorage({ databaseUrl, encryptionKeys: [encryptionKey] });
  const redirectUri = 'http://127.0.0.1:9/auth/callback';
  const scopes = options.scopes ?? ALL_SCOPES;
  const app = platform.registerApp({
    name: 'Client test app',
    redirectUri,
    webhookUrl: 'http://127.0.0.1:9/webhooks',
    scopes,
    rateLimit: options.rateLimit,
  });
  const endpoint = {
    url: `${platform.authUrl}/oauth/token`,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    encoding: 'json' as const,
  };

  async function install(o: { seed?: boolean | number; scopes?: string[]; storeId?: string } = {}) {
    const storeId = o.storeId ?? platform.createStore({ seed: o.seed ?? false }).storeId;
    const verifier = randomBytes(32).toString('base64url');
    const authorize = new URL(`${platform.authUrl}/oauth/authorize`);
    authorize.search = new URLSearchParams({
      client_id: app.clientId,
      redirect_uri: redirectUri,
      scope: (o.scopes ?? scopes).join(','),
      state: randomBytes(16).toString('base64url'),
      response_type: 'code',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      store_id: storeId,
    }).toString();
    const callback = new URL(
      platform.approveInstall({ authorizeUrl: authorize.toString(), storeId }),
    );
    const code = callback.searchParams.get('code');
    if (!code) throw new Error('approveInstall returned no code');
    const t = await requestToken(endpoint, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    return storage.installations.upsert(storeId, {
      scopes: t.scopes,
      accessToken: t.accessToken,
      refreshToken: t.refreshToken,
      accessTokenExpiresAt: new Date(clock() + t.expiresIn * 1000),
    });
  }

  return {
    platform,
    storage,
    databaseUrl,
    encryptionKey,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    redirectUri,
    install,
    runtime(o = {}) {
      const tokens = createTokenManager({
        installations: storage.installations,
        options: resolveRefreshOptions(o.refresh),
        refresh: (refreshToken, signal) =>
          requestToken(
            endpoint,
            { grant_type: 'refresh_token', refresh_token: refreshToken },
            { signal },
          ),
        onRevoked: o.onRevoked,
        now: o.now ?? clock,
      });
      const factory = createClientFactory({
        options: resolveClientOptions({
          baseUrl: platform.apiUrl,
          ...o.client,
        }),
        tokens,
      });
      return { tokens, client: (storeId) => factory.forStore(storeId) };
    },
    refreshCalls: () => platform.stats().tokenRequests.refresh_token,
    async close() {
      await storage.close();
      await platform.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
