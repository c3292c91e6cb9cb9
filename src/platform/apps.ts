/** The developer side: registered apps and their credentials. */
import { randomBytes, randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { randomToken, secretsEqual } from './crypto.js';
import { platformApps } from './db/auth-schema.js';
import type { PlatformDb } from './db/index.js';
import {
  PLATFORM_APP_EXISTS,
  PLATFORM_INVALID_APP,
  PLATFORM_INVALID_OPTIONS,
  PlatformError,
} from './errors.js';
import { type RateLimit, type Tier, validateRateLimit } from './options.js';
import { isScope, type Scope } from './scopes.js';

export interface RegisterAppInput {
  name: string;
  /** HTTPS, or http on a loopback host (127.0.0.0/8, ::1, localhost). */
  redirectUri: string;
  /** HTTPS, or http on a loopback host. */
  webhookUrl: string;
  /** Scope names from the document's Scopes table, as an array or comma-separated. */
  scopes: readonly string[] | string;
  /** @default 'community' */
  tier?: Tier;
  /** Where the admin opens the app (iframe) and sends Install. @default the origin of redirectUri */
  appUrl?: string;
  /** Overrides the tier's limits for this app. @default undefined (tier, or the global override) */
  rateLimit?: Partial<RateLimit>;
  /** Fixed client id (e.g. to match an app's `.env`). @default `app_<random>` */
  clientId?: string;
  /** Fixed client secret. @default 32 random bytes, base64url */
  clientSecret?: string;
  /** Fixed webhook secret, `whsec_<base64>`. @default `whsec_` + base64 of 32 random bytes */
  webhookSecret?: string;
}

export interface AppCredentials {
  appId: string;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
}

export interface RegisteredApp extends AppCredentials {
  name: string;
  redirectUri: string;
  webhookUrl: string;
  appUrl: string;
  scopes: Scope[];
  tier: Tier;
  rateLimit: Partial<RateLimit>;
  createdAt: Date;
}

const TIERS: readonly Tier[] = ['community', 'partner', 'elite'];

function invalid(message: string): never {
  throw new PlatformError(PLATFORM_INVALID_APP, `registerApp: ${message}`, { status: 400 });
}

/** True for hosts that never leave the machine: 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** HTTPS, or plain http only on a loopback host; no credentials or fragment. */
export function checkAppUrl(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) invalid(`${field} is required`);
  if (value.length > 2048) invalid(`${field} is longer than 2048 characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    invalid(`${field} is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    invalid(`${field} must use https (plain http only for 127.0.0.1, ::1 or localhost)`);
  }
  if (url.username || url.password) invalid(`${field} must not contain credentials`);
  if (url.hash) invalid(`${field} must not contain a fragment`);
  return value;
}

function checkScopes(value: unknown): Scope[] {
  const list =
    typeof value === 'string' ? value.split(',').map((s) => s.trim()) : (value as unknown[]);
  if (!Array.isArray(list) || list.length === 0) invalid('scopes must list at least one scope');
  const out: Scope[] = [];
  for (const s of list) {
    if (typeof s !== 'string' || !isScope(s)) {
      invalid(`scope ${JSON.stringify(String(s)).slice(0, 60)} is not in the Scopes table`);
    }
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

const CLIENT_ID_RE = /^[A-Za-z0-9._~-]{3,128}$/;

function toApp(row: typeof platformApps.$inferSelect): RegisteredApp {
  const rateLimit: Partial<RateLimit> = {};
  if (row.ratePerMinute !== null)
    rateLimit.perMinute = row.ratePerMinute < 0 ? null : row.ratePerMinute;
  if (row.rateConcurrent !== null) rateLimit.concurrent = row.rateConcurrent;
  return {
    appId: row.id,
    name: row.name,
    clientId: row.clientId,
    clientSecret: row.clientSecret,
    webhookSecret: row.webhookSecret,
    redirectUri: row.redirectUri,
    webhookUrl: row.webhookUrl,
    appUrl: row.appUrl,
    scopes: row.scopes.split(',').filter(isScope),
    tier: row.tier,
    rateLimit,
    createdAt: new Date(row.createdAt),
  };
}

/** App lookups are on every authorize and token request: keep them in memory. */
export interface AppRegistry {
  register(input: RegisterAppInput): RegisteredApp;
  byClientId(clientId: string): RegisteredApp | undefined;
  byId(appId: string): RegisteredApp | undefined;
  list(): RegisteredApp[];
}

export function createAppRegistry(db: PlatformDb): AppRegistry {
  const byClient = new Map<string, RegisteredApp>();
  const byAppId = new Map<string, RegisteredApp>();
  for (const row of db.select().from(platformApps).all()) {
    const app = toApp(row);
    byClient.set(app.clientId, app);
    byAppId.set(app.appId, app);
  }
  return {
    register(input) {
      if (typeof input !== 'object' || input === null) invalid('expects an object');
      const name = typeof input.name === 'string' ? input.name.trim() : '';
      if (name.length === 0 || name.length > 255) invalid('name must be 1..255 characters');
      const redirectUri = checkAppUrl('redirectUri', input.redirectUri);
      const webhookUrl = checkAppUrl('webhookUrl', input.webhookUrl);
      const appUrl =
        input.appUrl === undefined
          ? new URL(redirectUri).origin
          : checkAppUrl('appUrl', input.appUrl);
      const scopes = checkScopes(input.scopes);
      const tier = input.tier ?? 'community';
      if (!TIERS.includes(tier)) invalid(`tier must be one of ${TIERS.join(', ')}`);
      let rateLimit: Partial<RateLimit> = {};
      if (input.rateLimit !== undefined) {
        try {
          rateLimit = validateRateLimit('rateLimit', input.rateLimit);
        } catch (err) {
          if (err instanceof PlatformError && err.code === PLATFORM_INVALID_OPTIONS) {
            invalid(err.message.replace(/^registerApp: /, ''));
          }
          throw err;
        }
      }
      const clientId = input.clientId ?? `app_${randomToken(12)}`;
      if (!CLIENT_ID_RE.test(clientId)) invalid('clientId must be 3..128 URL-safe characters');
      const existing = byClient.get(clientId);
      if (existing) {
        // Registering the same credentials again is how a persisted dev platform
        // restarts (`npm run dev`, `--db` with `--app`): keep the app, its installs
        // and tokens, and take the new settings. Without the secret, or with another
        // one, nobody may take over or reconfigure the app.
        if (
          typeof input.clientSecret !== 'string' ||
          !secretsEqual(input.clientSecret, existing.clientSecret)
        ) {
          throw new PlatformError(
            PLATFORM_APP_EXISTS,
            `registerApp: clientId ${clientId} is already registered, and registering it again needs ` +
              'the same clientSecret. Pass the secret it was registered with, choose another clientId, ' +
              'or start from a fresh platform database.',
            { status: 409 },
          );
        }
      }
      const clientSecret = input.clientSecret ?? randomToken(32);
      if (typeof clientSecret !== 'string' || clientSecret.length < 16) {
        invalid('clientSecret must be at least 16 characters');
      }
      const webhookSecret =
        input.webhookSecret ??
        existing?.webhookSecret ??
        `whsec_${randomBytes(32).toString('base64')}`;
      if (
        typeof webhookSecret !== 'string' ||
        !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(webhookSecret) ||
        Buffer.from(webhookSecret.slice(6), 'base64').length < 16
      ) {
        invalid('webhookSecret must be whsec_ followed by base64 of at least 16 bytes');
      }
      const row: typeof platformApps.$inferInsert = {
        id: existing?.appId ?? randomUUID(),
        name,
        clientId,
        clientSecret,
        webhookSecret,
        redirectUri,
        webhookUrl,
        appUrl,
        scopes: scopes.join(','),
        tier,
        // -1 stores "unlimited" so null can keep meaning "no override".
        ratePerMinute:
          rateLimit.perMinute === undefined
            ? null
            : rateLimit.perMinute === null
              ? -1
              : rateLimit.perMinute,
        rateConcurrent: rateLimit.concurrent ?? null,
        createdAt: existing?.createdAt.getTime() ?? Date.now(),
      };
      if (existing) {
        const { id: _id, clientId: _clientId, createdAt: _createdAt, ...settings } = row;
        db.update(platformApps).set(settings).where(eq(platformApps.id, existing.appId)).run();
      } else {
        db.insert(platformApps).values(row).run();
      }
      const app = toApp(db.select().from(platformApps).where(eq(platformApps.id, row.id)).get()!);
      byClient.set(app.clientId, app);
      byAppId.set(app.appId, app);
      return app;
    },
    byClientId: (clientId) => byClient.get(clientId),
    byId: (appId) => byAppId.get(appId),
    list: () => [...byAppId.values()],
  };
}
