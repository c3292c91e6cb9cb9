/**
 * The kit's tables on SQLite. Column SQL names match ./postgres.ts one for
 * one, so the repositories run unchanged on both dialects. Timestamps are
 * epoch milliseconds; booleans are 0/1.
 */
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

const ms = (name: string) => integer(name, { mode: 'timestamp_ms' });

export const installations = sqliteTable(
  'store_app_installations',
  {
    storeId: text('store_id').primaryKey(),
    /** Space-separated, as OAuth writes scopes. */
    scopes: text('scopes').notNull(),
    accessTokenEnc: text('access_token_enc').notNull(),
    refreshTokenEnc: text('refresh_token_enc'),
    keyId: text('key_id').notNull(),
    accessExpiresAt: ms('access_expires_at').notNull(),
    installedAt: ms('installed_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
    version: integer('version').notNull().default(1),
    needsReauth: integer('needs_reauth', { mode: 'boolean' }).notNull().default(false),
    refreshLeaseOwner: text('refresh_lease_owner'),
    refreshLeaseUntil: ms('refresh_lease_until'),
    /**
     * When the platform issued this installation's tokens, in the platform's
     * clock (the token response's `Date` header): uninstall events are
     * compared with this, never with our clock. null for rows written before
     * it existed or when the platform sent no `Date`.
     */
    platformInstalledAt: ms('platform_installed_at'),
  },
  (t) => [index('store_app_installations_access_expires_at_idx').on(t.accessExpiresAt)],
);

export const sessions = sqliteTable(
  'store_app_sessions',
  {
    sid: text('sid').primaryKey(),
    storeId: text('store_id'),
    data: text('data', { mode: 'json' }).notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [
    index('store_app_sessions_store_id_idx').on(t.storeId),
    index('store_app_sessions_expires_at_idx').on(t.expiresAt),
  ],
);

export const webhookDeliveries = sqliteTable(
  'store_app_webhook_deliveries',
  {
    webhookId: text('webhook_id').primaryKey(),
    topic: text('topic').notNull(),
    receivedAt: ms('received_at').notNull(),
  },
  (t) => [index('store_app_webhook_deliveries_received_at_idx').on(t.receivedAt)],
);

export const purgeAudit = sqliteTable(
  'store_app_purge_audit',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    storeId: text('store_id').notNull(),
    purgedAt: ms('purged_at').notNull(),
    /** The uninstall event's own time (platform clock) when an event caused the purge. */
    eventAt: ms('event_at'),
    counts: text('counts', { mode: 'json' }).notNull(),
  },
  (t) => [index('store_app_purge_audit_store_id_idx').on(t.storeId)],
);

/**
 * Ids that may be used once until they expire (launch token jti), shared by
 * every process on the database. Keyed by the id, not a store: no store data.
 */
export const claims = sqliteTable(
  'store_app_claims',
  {
    namespace: text('namespace').notNull(),
    id: text('id').notNull(),
    expiresAt: ms('expires_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.namespace, t.id] }),
    index('store_app_claims_expires_at_idx').on(t.expiresAt),
  ],
);

/**
 * The purge outbox: an uninstall event's purge, recorded in the same
 * transaction as its webhook dedupe row and deleted once the purge is done.
 * Worked with backoff until then, and resumed at start-up.
 */
export const pendingPurges = sqliteTable(
  'store_app_pending_purges',
  {
    /** The webhook delivery id (one purge per event). */
    eventId: text('event_id').primaryKey(),
    storeId: text('store_id').notNull(),
    /** The uninstall's own time (platform clock). */
    eventAt: ms('event_at').notNull(),
    createdAt: ms('created_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ms('next_attempt_at').notNull(),
    /** Error code of the last failed attempt (never a message: it may hold data). */
    lastError: text('last_error'),
    /**
     * 'purge', or 'sweep': the purge committed and a second pass runs at
     * `next_attempt_at` for rows written by requests still in flight then.
     */
    kind: text('kind').notNull().default('purge'),
    /** The claim of the instance working the entry (one worker at a time). */
    leaseOwner: text('lease_owner'),
    leaseUntil: ms('lease_until'),
  },
  (t) => [index('store_app_pending_purges_next_attempt_at_idx').on(t.nextAttemptAt)],
);
