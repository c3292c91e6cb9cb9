/**
 * `storeApp()` options: composes each module's options schema (declared in
 * `src/<module>/options.ts`, with its types, defaults and messages) into one,
 * overlays the environment variables that back them, and validates the whole
 * in one pass at start. Nothing else in the kit reads process.env.
 */
import * as v from 'valibot';
import {
  authenticatedOptionsSchema,
  type ResolvedAuthenticatedOptions,
} from '../authenticated/options.js';
import { clientOptionsSchema, type ResolvedClientOptions } from '../client/options.js';
import { routeKey } from '../core/route-path.js';
import { ConfigError, ConfigErrors } from '../errors/index.js';
import {
  HEALTH_DEFAULTS,
  HEALTH_TOKEN_ENV,
  healthOptionsSchema,
  type ResolvedHealthOptions,
} from '../health/options.js';
import {
  embeddedOptionsSchema,
  loggerOptionsSchema,
  type ResolvedHttpOptions,
  SESSION_ENV,
  sessionOptionsSchema,
} from '../http/options.js';
import { authRouteOptionsSchema, type ResolvedAuthRouteOptions } from '../install/options.js';
import { OAUTH_ENV, oauthOptionsSchema, type ResolvedOAuthOptions } from '../oauth/options.js';
import {
  closest,
  httpUrl,
  PARSE_CONFIG,
  parseOptions,
  required,
  toConfigErrors,
} from '../options/index.js';
import {
  purgeAppOptionsEntries,
  type ResolvedPurgeAppOptions,
  storeScopedTablesNeedBuiltin,
} from '../purge/options.js';
import { type ResolvedRefreshOptions, refreshOptionsSchema } from '../refresh/options.js';
import {
  type ResolvedSecurityHeadersOptions,
  securityHeadersOptionsSchema,
} from '../shells/express/options.js';
import { type ResolvedShutdownOptions, shutdownOptionsSchema } from '../shutdown/options.js';
import {
  checkStorageMode,
  type ResolvedStorageOptions,
  STORAGE_ENV,
  type StoreAppStorageOptions,
  storageOptionsSchema,
} from '../storage/options.js';
import { validateStoreScopedTables } from '../storage/scoped-tables.js';
import { DEFAULT_DATABASE_URL, parseDatabaseUrl } from '../storage/url.js';
import {
  type ResolvedWebhookOptions,
  WEBHOOK_ENV,
  webhookOptionsSchema,
} from '../webhooks/options.js';

export type { AuthenticatedOptions } from '../authenticated/options.js';
export type { ClientOptions } from '../client/options.js';
export { ConfigErrors } from '../errors/index.js';
export type { HealthOptions } from '../health/options.js';
export type { EmbeddedOptions, LoggerOptions, SessionOptions } from '../http/options.js';
export type { AuthRouteOptions } from '../install/options.js';
export type { OAuthOptions } from '../oauth/options.js';
export type { PurgeAppOptions } from '../purge/options.js';
export type { RefreshOptions } from '../refresh/options.js';
export type { SecurityHeadersOptions } from '../shells/express/options.js';
export type { ShutdownOptions } from '../shutdown/options.js';
export type { ResolvedStorageOptions } from '../storage/options.js';
export type { WebhookOptions } from '../webhooks/options.js';
/** `storeApp({ storage })`: database, encryption keys, migrations, pool. */
export type StorageOptions = StoreAppStorageOptions;

const APP_URL_ENV = 'STORE_APP_URL';
const NODE_ENV = 'NODE_ENV';

/** The minimum level the kit logs (`logger.level`): fatal, error, warn, info, debug, trace, silent. */
const LOGGER_ENV = { level: 'LOG_LEVEL' } as const;

/** Environment variables backing options, per section (`appUrl` at the top). */
const SECTION_ENV = {
  oauth: OAUTH_ENV,
  storage: STORAGE_ENV,
  session: SESSION_ENV,
  webhooks: WEBHOOK_ENV,
  logger: LOGGER_ENV,
} as const;

/** Every environment variable the kit reads. */
export const ENV = {
  ...OAUTH_ENV,
  appUrl: APP_URL_ENV,
  ...STORAGE_ENV,
  sessionSecret: SESSION_ENV.secret,
  webhookSecret: WEBHOOK_ENV.secrets,
  logLevel: LOGGER_ENV.level,
  nodeEnv: NODE_ENV,
} as const;

/**
 * The whole `storeApp()` schema. `relaxed` (NODE_ENV development or test)
 * accepts plain-HTTP URLs outside loopback.
 */
function storeAppOptionsSchema(relaxed: boolean) {
  return v.strictObject({
    /**
     * The app's public URL (scheme, host and any base path). HTTPS is required
     * outside loopback unless NODE_ENV is development or test.
     * @default process.env.STORE_APP_URL (required)
     */
    appUrl: required(
      httpUrl('the public HTTPS URL of your app', relaxed),
      'set it to the public HTTPS URL of your app.',
    ),
    /**
     * The environment name; `development` and `test` relax the HTTPS rule.
     * @default process.env.NODE_ENV, else 'production'
     */
    environment: v.optional(v.string('must be a string such as production, development or test.')),
    /** OAuth client and the platform's endpoints. */
    oauth: v.optional(oauthOptionsSchema(relaxed), {}),
    /** Install routes and hooks. */
    auth: v.optional(authRouteOptionsSchema, {}),
    /** Database, token encryption keys, migrations. */
    storage: v.optional(storageOptionsSchema, {}),
    /** The session cookie. */
    session: v.optional(sessionOptionsSchema, {}),
    /** Running inside the merchant admin's iframe. */
    embedded: v.optional(embeddedOptionsSchema(relaxed), {}),
    /** Your pino logger, or where a kit-made one writes. */
    logger: v.optional(loggerOptionsSchema, {}),
    /** helmet's headers on the kit's routes. */
    securityHeaders: v.optional(securityHeadersOptionsSchema, {}),
    /** The signed webhook receiver. */
    webhooks: v.optional(webhookOptionsSchema, {}),
    /** The platform API client. */
    client: v.optional(clientOptionsSchema, {}),
    /** Automatic token refresh. */
    refresh: v.optional(refreshOptionsSchema, {}),
    /** `kit.authenticated()` and app session tokens. */
    authenticated: v.optional(authenticatedOptionsSchema, {}),
    /** The opt-in health endpoint (no route unless given). */
    health: v.optional(healthOptionsSchema),
    /** How `kit.shutdown()` stops the instance (docs/operations.md). */
    shutdown: v.optional(shutdownOptionsSchema, {}),
    ...purgeAppOptionsEntries,
  });
}

type Schema = ReturnType<typeof storeAppOptionsSchema>;

/**
 * Everything `storeApp()` accepts. Each section is one module's options;
 * top-level `storeScopedTables` and `onPurge` tell the kit what to delete on
 * uninstall. Unknown keys are refused at start.
 */
export type StoreAppOptions = v.InferInput<Schema>;

export interface ResolvedConfig extends ResolvedHttpOptions {
  environment: string;
  securityHeaders: ResolvedSecurityHeadersOptions;
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
  health: ResolvedHealthOptions;
  shutdown: ResolvedShutdownOptions;
}

type Env = Readonly<Record<string, string | undefined>>;

const schemas = new Map<boolean, Schema>();
function schemaFor(relaxed: boolean): Schema {
  let s = schemas.get(relaxed);
  if (!s) {
    s = storeAppOptionsSchema(relaxed);
    schemas.set(relaxed, s);
  }
  return s;
}

/** An environment value, trimmed; blank counts as unset. */
function envValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
}

/**
 * The options with the environment filled in where an option is not given,
 * and which option paths were read from which variable (so a problem names
 * the variable the operator has to fix).
 */
function overlayEnvironment(
  options: StoreAppOptions,
  env: Env,
): { input: Record<string, unknown>; settings: Map<string, string> } {
  const input: Record<string, unknown> = { ...options };
  const settings = new Map<string, string>();
  if (input['appUrl'] === undefined) {
    input['appUrl'] = envValue(env, APP_URL_ENV);
    settings.set('appUrl', APP_URL_ENV);
  }
  for (const [section, bindings] of Object.entries(SECTION_ENV)) {
    const given = input[section];
    // A section of the wrong type is reported by the schema as it is.
    if (given !== undefined && (typeof given !== 'object' || given === null)) continue;
    const merged: Record<string, unknown> = { ...(given as object | undefined) };
    for (const [key, name] of Object.entries(bindings)) {
      if (merged[key] !== undefined) continue;
      // An app-provided storage adapter decides where data lives: DATABASE_URL is not read.
      if (section === 'storage' && key === 'databaseUrl' && merged['adapter'] !== undefined) {
        continue;
      }
      merged[key] = envValue(env, name);
      settings.set(`${section}.${key}`, name);
    }
    input[section] = merged;
  }
  // health is opt-in: its token is read only for a route the app asked for.
  const health = input['health'];
  if (typeof health === 'object' && health !== null && !('token' in health)) {
    const token = envValue(env, HEALTH_TOKEN_ENV);
    if (token !== undefined) {
      input['health'] = { ...health, token };
      settings.set('health.token', HEALTH_TOKEN_ENV);
    }
  }
  return { input, settings };
}

/** The names of every variable the kit reads, for typo hints. */
const KNOWN_ENV: ReadonlySet<string> = new Set([
  APP_URL_ENV,
  NODE_ENV,
  HEALTH_TOKEN_ENV,
  ...Object.values(SECTION_ENV).flatMap((b) => Object.values(b)),
]);

/**
 * A variable that is missing while a near spelling is set is most likely a
 * typo: say so in its problem.
 */
function withTypoHint(problem: ConfigError, env: Env): ConfigError {
  if (!KNOWN_ENV.has(problem.setting) || envValue(env, problem.setting) !== undefined)
    return problem;
  const candidates = Object.keys(env).filter(
    (k) => !KNOWN_ENV.has(k) && envValue(env, k) !== undefined,
  );
  const near = closest(problem.setting, candidates);
  if (near === undefined) return problem;
  const reason = problem.message.slice(problem.setting.length + 2);
  return new ConfigError(
    problem.setting,
    `${reason.replace(/\.$/, '')} (${near} is set: did you mean ${problem.setting}?).`,
  );
}

/**
 * Reads options and the environment (options win), fills defaults and
 * validates everything once. Throws ConfigError naming the setting (the
 * option path, or the environment variable it came from) and the fix; several
 * mistakes are reported together (ConfigErrors). Unknown option keys are
 * errors with a "did you mean" suggestion.
 */
export function resolveConfig(
  options: StoreAppOptions = {},
  env: Env = process.env,
): ResolvedConfig {
  if (typeof options !== 'object' || options === null) {
    return parseOptions(schemaFor(false), options) as never;
  }
  const environment =
    (typeof options.environment === 'string' ? options.environment : undefined) ??
    envValue(env, NODE_ENV) ??
    'production';
  const o = validate(options, env, environment === 'development' || environment === 'test');
  const clash = clashingRoutes(o);
  if (clash) {
    const example = clash.setting === 'health.path' ? ", such as '/healthz'" : '';
    throw new ConfigError(
      clash.setting === 'the session-token route' ? 'auth.path' : clash.setting,
      `is already the path of ${clash.taken} (kit paths match case-insensitively, with or without a trailing slash); choose another${example}.`,
    );
  }
  return resolved(o, environment);
}

type Parsed = v.InferOutput<Schema>;

/**
 * One validation pass over the options with the environment overlaid; every
 * problem found is thrown together (`ConfigErrors`), each naming its setting.
 */
function validate(options: StoreAppOptions, env: Env, relaxed: boolean): Parsed {
  const schema = schemaFor(relaxed);
  const { input, settings } = overlayEnvironment(options, env);
  const result = v.safeParse(schema, input, PARSE_CONFIG);
  const problems = result.success ? [] : toConfigErrors(schema, result.issues, { settings });
  // The app's tables must match the database's dialect: checked beside the
  // other problems, so one start reports all of them.
  const purgeProblem = checkStoreScopedTables(input, problems);
  if (purgeProblem) problems.push(purgeProblem);
  const modeProblem = checkStorageMode(input['storage']);
  if (modeProblem) problems.push(modeProblem);
  if (!result.success || problems.length > 0) {
    const all = problems.map((p) => withTypoHint(p, env));
    throw all.length === 1 ? all[0]! : new ConfigErrors(all);
  }
  return result.output;
}

/** The resolved configuration of validated options: defaults and derived values in one place. */
function resolved(o: Parsed, environment: string): ResolvedConfig {
  const app = new URL(o.appUrl);
  const appPath = app.pathname.replace(/\/+$/, '');
  const secure = app.protocol === 'https:';
  const authUrl = o.oauth.authUrl;
  return {
    environment,
    appUrl: o.appUrl,
    oauth: o.oauth,
    auth: resolvedAuth(o.auth, app.origin + appPath),
    storage: o.storage,
    session: {
      secret: o.session.secret,
      cookieName: o.session.cookieName,
      maxAgeSeconds: o.session.maxAgeSeconds,
      store: o.session.store,
      secure,
      // SameSite=None needs Secure; on plain-HTTP loopback development the
      // browser would drop it, so Lax is the only cookie that works there.
      sameSite: o.embedded.enabled && secure ? 'none' : 'lax',
      partitioned: o.embedded.enabled && secure,
    },
    embedded: {
      enabled: o.embedded.enabled,
      adminOrigin: o.embedded.adminOrigin ?? new URL(authUrl).origin,
      adminAppUrl: o.embedded.adminAppUrl.replaceAll('{authUrl}', authUrl),
      launchParam: o.embedded.launchParam,
    },
    logger: resolvedLogger(o.logger, environment),
    securityHeaders: o.securityHeaders,
    webhooks: o.webhooks,
    client: {
      ...o.client,
      baseUrl: o.client.baseUrl ?? o.oauth.apiUrl,
      sessionCheckUrl: o.client.sessionCheckUrl ?? o.oauth.sessionCheckUrl,
    },
    refresh: o.refresh,
    authenticated: o.authenticated,
    purge: {
      storeScopedTables: o.storeScopedTables,
      onPurge: o.onPurge,
      // Past the cache TTL every instance re-reads the (gone) installation; a
      // request authenticated just before that still runs up to the client timeout.
      horizonMs: o.purgeHorizonMs ?? o.refresh.cacheTtlMs + o.client.timeoutMs,
    },
    health: o.health ? { ...o.health } : HEALTH_DEFAULTS,
    shutdown: o.shutdown,
  };
}

/** The install routes' settings, with their absolute URLs under the app's. */
function resolvedAuth(auth: Parsed['auth'], base: string): ResolvedAuthRouteOptions {
  return {
    path: auth.path,
    callbackPath: auth.callbackPath,
    redirectUri: base + auth.callbackPath,
    beginUrl: base + auth.path,
    stateTtlSeconds: auth.stateTtlSeconds,
    bindingCookieName: auth.bindingCookieName,
    beforeInstall: auth.beforeInstall,
    afterInstall: auth.afterInstall,
    narrowerScopes: auth.narrowerScopes,
    maxCallbacksPerSourcePerMinute: auth.maxCallbacksPerSourcePerMinute,
    maxExchangesInFlight: auth.maxExchangesInFlight,
  };
}

/** The logger settings: the app's instance, or where a kit-made one writes, and the level. */
function resolvedLogger(logger: Parsed['logger'], environment: string) {
  const instance = 'instance' in logger ? logger.instance : undefined;
  const destination = 'destination' in logger ? logger.destination : undefined;
  return {
    level: logger.level ?? levelOf(instance) ?? (environment === 'test' ? 'silent' : 'info'),
    instance,
    destination,
  };
}

/**
 * The first two kit routes the one matching rule (case-insensitive, one trailing slash
 * optional) cannot tell apart: the second's setting and the first's name.
 */
function clashingRoutes(o: {
  auth: { path: string; callbackPath: string };
  webhooks: { path: string };
  health?: { path: string } | undefined;
}): { setting: string; taken: string } | undefined {
  const routes: Array<[string, string]> = [
    [o.auth.path, 'auth.path'],
    [o.auth.callbackPath, 'auth.callbackPath'],
    [`${o.auth.path}/session-token`, 'the session-token route'],
    [`${o.auth.path}/browser.js`, 'the browser module'],
    [o.webhooks.path, 'webhooks.path'],
    ...(o.health ? [[o.health.path, 'health.path'] as [string, string]] : []),
  ];
  const seen = new Map<string, string>();
  for (const [path, setting] of routes) {
    const taken = seen.get(routeKey(path));
    if (taken !== undefined) return { setting, taken };
    seen.set(routeKey(path), setting);
  }
  return undefined;
}

const LEVEL_NAMES: ReadonlySet<string> = new Set([
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
]);

/** The level of the app's logger when it states one the kit knows (pino's, winston's `info`, …). */
function levelOf(instance: unknown): ResolvedHttpOptions['logger']['level'] | undefined {
  const level = (instance as { level?: unknown } | undefined)?.level;
  return typeof level === 'string' && LEVEL_NAMES.has(level)
    ? (level as ResolvedHttpOptions['logger']['level'])
    : undefined;
}

/** The dialect check of `storeScopedTables`, when the database URL itself is valid. */
function checkStoreScopedTables(
  input: Record<string, unknown>,
  problems: readonly ConfigError[],
): ConfigError | undefined {
  const tables = input['storeScopedTables'];
  if (!Array.isArray(tables) || problems.some((p) => p.setting === 'storeScopedTables')) {
    return undefined;
  }
  const storage = input['storage'] as { databaseUrl?: unknown; adapter?: unknown } | undefined;
  if (storage?.adapter !== undefined) {
    return tables.length > 0 ? storeScopedTablesNeedBuiltin() : undefined;
  }
  const url = storage?.databaseUrl ?? DEFAULT_DATABASE_URL;
  if (typeof url !== 'string') return undefined;
  let dialect: ReturnType<typeof parseDatabaseUrl>['dialect'];
  try {
    dialect = parseDatabaseUrl(url).dialect;
  } catch {
    return undefined; // reported on the database URL itself
  }
  try {
    validateStoreScopedTables(tables, dialect, 'storeScopedTables');
    return undefined;
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
}
