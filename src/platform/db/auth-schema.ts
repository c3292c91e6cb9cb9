/**
 * The auth side of the local platform: registered apps, pending authorization
 * codes, tokens, installations and webhook deliveries. Store ids are kept by
 * value (no foreign key to `stores`) so the two migration sets stay independent.
 * Codes and tokens are stored only as SHA-256 hashes.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const platformApps = sqliteTable('platform_apps', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  clientId: text('client_id').notNull().unique(),
  // Kept in clear because the platform signs launch JWTs with it (HS256) and
  // must show it in the dashboard, as a real developer dashboard does.
  clientSecret: text('client_secret').notNull(),
  webhookSecret: text('webhook_secret').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  webhookUrl: text('webhook_url').notNull(),
  appUrl: text('app_url').notNull(),
  /** Comma-separated registered scopes. */
  scopes: text('scopes').notNull(),
  tier: text('tier', { enum: ['community', 'partner', 'elite'] }).notNull(),
  /** Per-app override of the tier's requests per minute; null = tier default. */
  ratePerMinute: integer('rate_per_minute'),
  /** Per-app override of the tier's concurrency; null = tier default. */
  rateConcurrent: integer('rate_concurrent'),
  createdAt: integer('created_at').notNull(),
});

export const platformAuthCodes = sqliteTable('platform_auth_codes', {
  codeHash: text('code_hash').primaryKey(),
  appId: text('app_id').notNull(),
  storeId: text('store_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  scopes: text('scopes').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  /** Unix seconds. */
  expiresAt: integer('expires_at').notNull(),
  /** Unix seconds; null while unused. */
  usedAt: integer('used_at'),
  createdAt: integer('created_at').notNull(),
});

export const platformTokens = sqliteTable(
  'platform_tokens',
  {
    id: text('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    kind: text('kind', { enum: ['access', 'refresh'] }).notNull(),
    appId: text('app_id').notNull(),
    storeId: text('store_id').notNull(),
    scopes: text('scopes').notNull(),
    /** Unix seconds. */
    expiresAt: integer('expires_at').notNull(),
    /** Unix seconds; set on uninstall, reinstall or code reuse. */
    revokedAt: integer('revoked_at'),
    /** Hash of the authorization code the token family started from. */
    codeHash: text('code_hash'),
    /** Refresh tokens: when a rotation replaced it (grace period starts). */
    rotatedAt: integer('rotated_at'),
    /** Refresh tokens: 1 once the single grace use was spent. */
    graceUsed: integer('grace_used').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('platform_tokens_hash_idx').on(t.tokenHash),
    index('platform_tokens_app_store_idx').on(t.appId, t.storeId),
    index('platform_tokens_code_idx').on(t.codeHash),
  ],
);

export const platformInstallations = sqliteTable(
  'platform_installations',
  {
    id: text('id').primaryKey(),
    appId: text('app_id').notNull(),
    storeId: text('store_id').notNull(),
    scopes: text('scopes').notNull(),
    installedAt: integer('installed_at').notNull(),
    /** Unix seconds; null while installed. */
    uninstalledAt: integer('uninstalled_at'),
  },
  (t) => [uniqueIndex('platform_installations_app_store_idx').on(t.appId, t.storeId)],
);

export const platformWebhookDeliveries = sqliteTable(
  'platform_webhook_deliveries',
  {
    id: text('id').primaryKey(),
    appId: text('app_id').notNull(),
    storeId: text('store_id').notNull(),
    topic: text('topic').notNull(),
    url: text('url').notNull(),
    body: text('body').notNull(),
    status: text('status', { enum: ['pending', 'succeeded', 'failed'] }).notNull(),
    /** JSON array of attempts: { at, status?, error?, durationMs }. */
    attempts: text('attempts').notNull().default('[]'),
    /** Unix ms of the next scheduled attempt; null when finished. */
    nextAttemptAt: integer('next_attempt_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('platform_webhook_deliveries_app_idx').on(t.appId)],
);
