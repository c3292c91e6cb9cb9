/**
 * `storeApp()` options: one typed object composed of each module's own
 * options, the environment variables that back them, every default, and the
 * one validation pass at start. Nothing else in the kit reads process.env.
 */
import type {
  AuthenticatedOptions,
  ResolvedAuthenticatedOptions,
} from '../authenticated/options.js';
import { resolveAuthenticatedOptions } from '../authenticated/options.js';
import type { ClientOptions, ResolvedClientOptions } from '../client/options.js';
import { resolveClientOptions } from '../client/options.js';
import { ENCRYPTION_KEYS_SETTING, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError } from '../errors/index.js';
import type {
  EmbeddedOptions,
  LoggerOptions,
  ResolvedHttpOptions,
  SecurityHeadersOptions,
  SessionOptions,
} from '../http/options.js';
import type { AuthRouteOptions, ResolvedAuthRouteOptions } from '../install/options.js';
import type { OAuthOptions, ResolvedOAuthOptions } from '../oauth/options.js';
import { KNOWN_SCOPES } from '../oauth/scopes.js';
import { resolvePurgeAppOptions } from '../purge/index.js';
import type { PurgeAppOptions, ResolvedPurgeAppOptions } from '../purge/options.js';
import type { RefreshOptions, ResolvedRefreshOptions } from '../refresh/options.js';
import { resolveRefreshOptions } from '../refresh/options.js';
import { type DatabaseTarget, DEFAULT_DATABASE_URL, parseDatabaseUrl } from '../storage/url.js';
import type { ResolvedWebhookOptions, WebhookOptions } from '../webhooks/options.js';
import { resolveWebhookOptions } from '../webhooks/options.js';

export type {
  AuthenticatedOptions,
  AuthRouteOptions,
  ClientOptions,
  EmbeddedOptions,
  LoggerOptions,
  OAuthOptions,
  PurgeAppOptions,
  RefreshOptions,
  SecurityHeadersOptions,
  SessionOptions,
  WebhookOptions,
};

export interface StorageOptions {
  /**
   * SQLite (`file:./x.db`, a path, `:memory:`) or Postgres (`postgres://…`).
   * @default process.env.DATABASE_URL, else './data/store-app.db'
   */
  databaseUrl?: string;
  /**
   * Token encryption keys, base64url of 32 bytes each, newest first (the first
   * encrypts, all decrypt). Make one with `npx store-app keygen`.
   * @default process.env.STORE_APP_ENCRYPTION_KEYS (comma-separated; required)
   */
  encryptionKeys?: string | readonly string[];
  /**
   * Apply pending migrations when `storeApp()` starts. Turn off to run
   * `npx store-app migrate` yourself (e.g. in a release step).
   * @default true
   */
  migrate?: boolean;
  /** Postgres pool settings (ignored for SQLite). */
  pool?: {
    /**
     * Most connections open at once.
     * @default 10
     */
    max?: number;
  };
}

/**
 * Everything `storeApp()` accepts. Top-level `storeScopedTables` and
 * `onPurge` (PurgeAppOptions) tell the kit what to delete on uninstall.
 */
export interface StoreAppOptions extends PurgeAppOptions {
  /**
   * The app's public URL (scheme, host and any base path). HTTPS is required
   * outside loopback unless NODE_ENV is development or test.
   * @default process.env.STORE_APP_URL (required)
   */
  appUrl?: string;
  /**
   * The environment name; `development` and `test` relax the HTTPS rule.
   * @default process.env.NODE_ENV, else 'production'
   */
  environment?: string;
  oauth?: OAuthOptions;
  /** Install routes and hooks. */
  auth?: AuthRouteOptions;
  storage?: StorageOptions;
  session?: SessionOptions;
  embedded?: EmbeddedOptions;
  logger?: LoggerOptions;
  securityHeaders?: SecurityHeadersOptions;
  webhooks?: WebhookOptions;
  client?: ClientOptions;
  refresh?: RefreshOptions;
  authenticated?: AuthenticatedOptions;
}

export interface ResolvedStorageOptions {
  databaseUrl: string;
  target: DatabaseTarget;
  /** Validated keys, newest first. */
  encryptionKeys: string[];
  migrate: boolean;
  poolMax: number;
}

export interface ResolvedConfig extends ResolvedHttpOptions {
  environment: string;
  /** Without a trailing slash. */
  appUrl: string;
  oauth: ResolvedOAuthOptions;
  auth: ResolvedAuthRouteOptions;
  storage: ResolvedStorageOptions;
  webhooks: ResolvedWebhookOptions;
  client: ResolvedClientOptions;
  refresh: ResolvedRefreshOptions;
  authenticated: ResolvedAuthenticatedOptions;
  purge: ResolvedPurgeAppOptions;
}

/** Every environment variable the kit reads. */
export const ENV = {
  clientId: 'STORE_APP_CLIENT_ID',
  clientSecret: 'STORE_APP_CLIENT_SECRET',
  scopes: 'STORE_APP_SCOPES',
  appUrl: 'STORE_APP_URL',
  authUrl: 'STORE_AUTH_URL',
  apiUrl: 'STORE_API_URL',
  databaseUrl: 'DATABASE_URL',
  encryptionKeys: ENCRYPTION_KEYS_SETTING,
  sessionSecret: 'STORE_APP_SESSION_SECRET',
  webhookSecret: 'STORE_APP_WEBHOOK_SECRET',
  nodeEnv: 'NODE_ENV',
} as const;

/** Every default, in one place. */
export const DEFAULTS = {
  environment: 'production',
  databaseUrl: DEFAULT_DATABASE_URL,
  migrate: true,
  poolMax: 10,
  authorizePath: '/oauth/authorize',
  tokenPath: '/oauth/token',
  refreshPath: '/oauth/token',
  sessionCheckPath: '/oauth/session',
  apiPath: '/api/v1',
  tokenRequestEncoding: 'json',
  sendStoreIdOnAuthorize: true,
  installTimeFromServerDate: true,
  discovery: false,
  tokenTimeoutMs: 10_000,
  authPath: '/auth',
  callbackPath: '/auth/callback',
  stateTtlSeconds: 600,
  bindingCookieName: 'store_app_oauth',
  sessionCookieName: 'store_app.sid',
  sessionMaxAgeSeconds: 86_400,
  sessionSecretMinLength: 32,
  embedded: true,
  adminAppUrl: '{authUrl}/admin/stores/{store_id}/apps/{client_id}',
  launchParam: 'launch',
  logLevel: 'info',
  securityHeaders: true,
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/** Several configuration mistakes at once; `problems` holds each one. */
export class ConfigErrors extends ConfigError {
  readonly problems: readonly ConfigError[];
  constructor(problems: readonly ConfigError[]) {
    super(
      problems.map((p) => p.setting).join(', '),
      `${problems.length} configuration problems:\n${problems.map((p) => `  - ${p.message}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Reads options and the environment (options win), fills defaults and
 * validates everything once. Throws ConfigError naming the setting and the
 * fix; several mistakes are reported together (ConfigErrors).
 */
export function resolveConfig(
  options: StoreAppOptions = {},
  env: Env = process.env,
): ResolvedConfig {
  const problems: ConfigError[] = [];
  /** Runs one resolution step, collecting its ConfigError instead of stopping. */
  const step = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ConfigErrors) problems.push(...err.problems);
      else if (err instanceof ConfigError) problems.push(err);
      else throw err;
      return undefined;
    }
  };
  const pick = <T>(
    optionPath: string,
    optionValue: T | undefined,
    envName: string | undefined,
  ): { value: T | string | undefined; setting: string } => {
    if (optionValue !== undefined) return { value: optionValue, setting: optionPath };
    if (envName !== undefined) {
      const v = env[envName];
      if (v !== undefined && v.trim() !== '') return { value: v.trim(), setting: envName };
    }
    return { value: undefined, setting: envName ?? optionPath };
  };

  const environment = options.environment ?? env[ENV.nodeEnv] ?? DEFAULTS.environment;
  const relaxed = environment === 'development' || environment === 'test';

  const o = options.oauth ?? {};
  const appUrl = step(() => {
    const p = pick('appUrl', options.appUrl, ENV.appUrl);
    return parseHttpUrl(p.setting, p.value, relaxed, 'the public HTTPS URL of your app');
  });
  const authUrl = step(() => {
    const p = pick('oauth.authUrl', o.authUrl, ENV.authUrl);
    return parseHttpUrl(p.setting, p.value, relaxed, "the platform's {auth_url}");
  });
  const apiUrl = step(() => {
    const p = pick('oauth.apiUrl', o.apiUrl, ENV.apiUrl);
    if (p.value === undefined)
      return authUrl === undefined ? undefined : authUrl + DEFAULTS.apiPath;
    return parseHttpUrl(
      p.setting,
      p.value,
      relaxed,
      "the platform's {base_url}, ending in /api/v1",
    );
  });
  const clientId = step(() =>
    requiredString(
      pick('oauth.clientId', o.clientId, ENV.clientId),
      'the client id from the developer dashboard',
    ),
  );
  const clientSecret = step(() =>
    requiredString(
      pick('oauth.clientSecret', o.clientSecret, ENV.clientSecret),
      'the client secret from the developer dashboard',
    ),
  );
  const scopes = step(() => parseScopes(pick('oauth.scopes', o.scopes, ENV.scopes)));
  const encoding = o.tokenRequestEncoding ?? DEFAULTS.tokenRequestEncoding;
  step(() => {
    if (encoding !== 'json' && encoding !== 'form') {
      throw new ConfigError('oauth.tokenRequestEncoding', "must be 'json' or 'form'.");
    }
  });
  const paths = {
    authorizePath: step(() => path('oauth.authorizePath', o.authorizePath, DEFAULTS.authorizePath)),
    tokenPath: step(() => path('oauth.tokenPath', o.tokenPath, DEFAULTS.tokenPath)),
    refreshPath: step(() => path('oauth.refreshPath', o.refreshPath, DEFAULTS.refreshPath)),
    sessionCheckPath: step(() =>
      path('oauth.sessionCheckPath', o.sessionCheckPath, DEFAULTS.sessionCheckPath),
    ),
  };
  const tokenTimeoutMs = step(() =>
    int('oauth.tokenTimeoutMs', o.tokenTimeoutMs, DEFAULTS.tokenTimeoutMs, 100),
  );
  const discovery = step(() => bool('oauth.discovery', o.discovery, DEFAULTS.discovery));
  const installTimeFromServerDate = step(() =>
    bool(
      'oauth.installTimeFromServerDate',
      o.installTimeFromServerDate,
      DEFAULTS.installTimeFromServerDate,
    ),
  );
  const sendStoreIdOnAuthorize = step(() =>
    bool('oauth.sendStoreIdOnAuthorize', o.sendStoreIdOnAuthorize, DEFAULTS.sendStoreIdOnAuthorize),
  );

  // Install routes
  const a = options.auth ?? {};
  const authPath = step(() => path('auth.path', a.path, DEFAULTS.authPath));
  const callbackPath = step(() => path('auth.callbackPath', a.callbackPath, DEFAULTS.callbackPath));
  const stateTtlSeconds = step(() =>
    int('auth.stateTtlSeconds', a.stateTtlSeconds, DEFAULTS.stateTtlSeconds, 30),
  );
  const bindingCookieName = step(() =>
    cookieName('auth.bindingCookieName', a.bindingCookieName, DEFAULTS.bindingCookieName),
  );
  step(() => {
    if (a.beforeInstall !== undefined && typeof a.beforeInstall !== 'function') {
      throw new ConfigError('auth.beforeInstall', 'must be a function.');
    }
    if (a.afterInstall !== undefined && typeof a.afterInstall !== 'function') {
      throw new ConfigError('auth.afterInstall', 'must be a function.');
    }
  });

  // Storage
  const s = options.storage ?? {};
  const db = pick('storage.databaseUrl', s.databaseUrl, ENV.databaseUrl);
  const databaseUrl = typeof db.value === 'string' ? db.value : DEFAULTS.databaseUrl;
  const target = step(() => parseDatabaseUrl(databaseUrl, db.setting));
  const keysPick = pick('storage.encryptionKeys', s.encryptionKeys, ENV.encryptionKeys);
  const encryptionKeys = step(() => {
    const raw = keysPick.value as string | readonly string[] | undefined;
    parseEncryptionKeys(raw, keysPick.setting);
    const list = typeof raw === 'string' ? raw.split(',') : (raw ?? []);
    return list.map((k) => k.trim()).filter((k) => k !== '');
  });
  const migrate = step(() => bool('storage.migrate', s.migrate, DEFAULTS.migrate));
  const poolMax = step(() => int('storage.pool.max', s.pool?.max, DEFAULTS.poolMax, 1));
  const purge = step(() =>
    target === undefined
      ? undefined
      : resolvePurgeAppOptions(
          { storeScopedTables: options.storeScopedTables, onPurge: options.onPurge },
          target.dialect,
        ),
  );

  // Session
  const se = options.session ?? {};
  const secretPick = pick('session.secret', se.secret, ENV.sessionSecret);
  const sessionSecret = step(() => {
    const raw = secretPick.value;
    const list = raw === undefined ? [] : typeof raw === 'string' ? [raw] : [...raw];
    if (list.length === 0) {
      throw new ConfigError(
        secretPick.setting,
        `no session secret is set; set ${ENV.sessionSecret} to a random string of at least ${DEFAULTS.sessionSecretMinLength} characters (e.g. \`npx store-app keygen\`).`,
      );
    }
    list.forEach((v, i) => {
      if (typeof v !== 'string' || v.length < DEFAULTS.sessionSecretMinLength) {
        throw new ConfigError(
          secretPick.setting,
          `secret #${i + 1} is shorter than ${DEFAULTS.sessionSecretMinLength} characters; use a random value (e.g. \`npx store-app keygen\`).`,
        );
      }
    });
    return list;
  });
  const sessionCookieName = step(() =>
    cookieName('session.cookieName', se.cookieName, DEFAULTS.sessionCookieName),
  );
  const sessionMaxAge = step(() =>
    int('session.maxAgeSeconds', se.maxAgeSeconds, DEFAULTS.sessionMaxAgeSeconds, 60),
  );

  // Embedded
  const em = options.embedded ?? {};
  const embeddedEnabled = step(() => bool('embedded.enabled', em.enabled, DEFAULTS.embedded));
  const adminOrigin = step(() => {
    if (em.adminOrigin === undefined)
      return authUrl === undefined ? undefined : new URL(authUrl).origin;
    return parseHttpUrl(
      'embedded.adminOrigin',
      em.adminOrigin,
      relaxed,
      'the merchant admin origin',
    )
      ? new URL(em.adminOrigin).origin
      : undefined;
  });
  const adminAppUrl = step(() => {
    const tpl = em.adminAppUrl ?? DEFAULTS.adminAppUrl;
    if (typeof tpl !== 'string' || !tpl.includes('{store_id}')) {
      throw new ConfigError(
        'embedded.adminAppUrl',
        'must be a URL template containing {store_id}.',
      );
    }
    return tpl;
  });
  const launchParam = step(() => {
    const v = em.launchParam ?? DEFAULTS.launchParam;
    if (typeof v !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(v)) {
      throw new ConfigError('embedded.launchParam', 'must be a query parameter name.');
    }
    return v;
  });

  // Logger
  const lg = options.logger ?? {};
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
  const logLevel = step(() => {
    const v =
      lg.level ?? lg.instance?.level ?? (environment === 'test' ? 'silent' : DEFAULTS.logLevel);
    if (!levels.includes(v)) {
      throw new ConfigError('logger.level', `must be one of ${levels.join(', ')}.`);
    }
    return v;
  });

  const sh = options.securityHeaders ?? {};
  const shEnabled = step(() =>
    bool('securityHeaders.enabled', sh.enabled, DEFAULTS.securityHeaders),
  );

  // Modules owned elsewhere validate their own options.
  const webhooks = step(() => resolveWebhookOptions(options.webhooks, env));
  const client = step(() =>
    resolveClientOptions({ ...options.client, baseUrl: options.client?.baseUrl ?? apiUrl }),
  );
  const refresh = step(() => resolveRefreshOptions(options.refresh));
  const authenticated = step(() => resolveAuthenticatedOptions(options.authenticated));

  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new ConfigErrors(problems);

  // Every step succeeded, so every value below is defined.
  const app = appUrl!;
  const auth = authUrl!;
  const secure = new URL(app).protocol === 'https:';
  const embedded = embeddedEnabled!;
  const appPath = new URL(app).pathname.replace(/\/+$/, '');
  return {
    environment,
    appUrl: app,
    oauth: {
      clientId: clientId!,
      clientSecret: clientSecret!,
      scopes: scopes!,
      authUrl: auth,
      apiUrl: apiUrl!,
      authorizeUrl: auth + paths.authorizePath!,
      tokenUrl: auth + paths.tokenPath!,
      refreshUrl: auth + paths.refreshPath!,
      sessionCheckUrl: auth + paths.sessionCheckPath!,
      tokenRequestEncoding: encoding,
      sendStoreIdOnAuthorize: sendStoreIdOnAuthorize!,
      installTimeFromServerDate: installTimeFromServerDate!,
      tokenTimeoutMs: tokenTimeoutMs!,
      discovery: discovery!,
    },
    auth: {
      path: authPath!,
      callbackPath: callbackPath!,
      redirectUri: new URL(app).origin + appPath + callbackPath!,
      beginUrl: new URL(app).origin + appPath + authPath!,
      stateTtlSeconds: stateTtlSeconds!,
      bindingCookieName: bindingCookieName!,
      beforeInstall: a.beforeInstall,
      afterInstall: a.afterInstall,
    },
    storage: {
      databaseUrl,
      target: target!,
      encryptionKeys: encryptionKeys!,
      migrate: migrate!,
      poolMax: poolMax!,
    },
    session: {
      secret: sessionSecret!,
      cookieName: sessionCookieName!,
      maxAgeSeconds: sessionMaxAge!,
      secure,
      // SameSite=None needs Secure; on plain-HTTP loopback development the
      // browser would drop it, so Lax is the only cookie that works there.
      sameSite: embedded && secure ? 'none' : 'lax',
      partitioned: embedded && secure,
    },
    embedded: {
      enabled: embedded,
      adminOrigin: adminOrigin!,
      adminAppUrl: adminAppUrl!.replaceAll('{authUrl}', auth),
      launchParam: launchParam!,
    },
    logger: {
      level: logLevel as ResolvedHttpOptions['logger']['level'],
      instance: lg.instance,
      destination: lg.destination,
    },
    securityHeaders: { enabled: shEnabled!, helmet: sh.helmet ?? {} },
    webhooks: webhooks!,
    client: client!,
    refresh: refresh!,
    authenticated: authenticated!,
    purge: purge!,
  };
}

/** Parses an absolute http(s) URL; refuses plain HTTP outside loopback unless relaxed. */
function parseHttpUrl(
  setting: string,
  value: unknown,
  relaxed: boolean,
  what: string,
): string | undefined {
  if (value === undefined) {
    throw new ConfigError(setting, `is not set; set it to ${what}.`);
  }
  if (typeof value !== 'string') throw new ConfigError(setting, `must be a URL string (${what}).`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(setting, `is not an absolute URL; set it to ${what}.`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(setting, 'must be an https:// URL.');
  }
  if (url.username || url.password) {
    throw new ConfigError(setting, 'must not contain credentials.');
  }
  if (url.search || url.hash) {
    throw new ConfigError(setting, 'must not contain a query or fragment.');
  }
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname) && !relaxed) {
    throw new ConfigError(
      setting,
      'must use HTTPS outside loopback (plain http:// is only accepted for localhost/127.0.0.1, or when NODE_ENV is development or test).',
    );
  }
  return url.origin + url.pathname.replace(/\/+$/, '');
}

function requiredString(p: { value: unknown; setting: string }, what: string): string {
  if (p.value === undefined) throw new ConfigError(p.setting, `is not set; set it to ${what}.`);
  if (typeof p.value !== 'string' || p.value.trim() === '') {
    throw new ConfigError(p.setting, `must be a non-empty string (${what}).`);
  }
  return p.value.trim();
}

function parseScopes(p: { value: unknown; setting: string }): string[] {
  const raw = p.value;
  if (raw === undefined) {
    throw new ConfigError(
      p.setting,
      'is not set; list the scopes your app needs, comma-separated (e.g. read_products,read_orders).',
    );
  }
  const list =
    typeof raw === 'string'
      ? raw.split(',')
      : Array.isArray(raw)
        ? (raw as unknown[]).map((x) => (typeof x === 'string' ? x : ''))
        : null;
  if (list === null)
    throw new ConfigError(p.setting, 'must be an array or a comma-separated string.');
  const scopes = [...new Set(list.map((x) => x.trim()).filter((x) => x !== ''))];
  if (scopes.length === 0) throw new ConfigError(p.setting, 'must name at least one scope.');
  const known: readonly string[] = KNOWN_SCOPES;
  const unknown = scopes.filter((x) => !known.includes(x));
  if (unknown.length > 0) {
    throw new ConfigError(
      p.setting,
      `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((x) => JSON.stringify(x.slice(0, 64))).join(', ')}; valid scopes are: ${KNOWN_SCOPES.join(', ')}.`,
    );
  }
  return scopes;
}

function path(setting: string, value: unknown, fallback: string): string {
  const v = value ?? fallback;
  if (typeof v !== 'string' || !/^\/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$/.test(v) || v.includes('//')) {
    throw new ConfigError(setting, 'must be a path starting with "/" (no query, no spaces).');
  }
  return v.length > 1 ? v.replace(/\/+$/, '') : v;
}

function int(setting: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ConfigError(setting, `must be an integer of at least ${min}.`);
  }
  return value;
}

function bool(setting: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new ConfigError(setting, 'must be true or false.');
  return value;
}

function cookieName(setting: string, value: unknown, fallback: string): string {
  const v = value ?? fallback;
  if (typeof v !== 'string' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(v)) {
    throw new ConfigError(setting, 'must be a valid cookie name.');
  }
  return v;
}
