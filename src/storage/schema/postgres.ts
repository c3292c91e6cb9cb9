/**
 * The kit's tables on Postgres. Column SQL names match ./sqlite.ts one for
 * one, so the repositories run unchanged on both dialects.
 */
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const installations = pgTable(
  'store_app_installations',
  {
    storeId: text('store_id').primaryKey(),
    /** Space-separated, as OAuth writes scopes. */
    scopes: text('scopes').notNull(),
    accessTokenEnc: text('access_token_enc').notNull(),
    refreshTokenEnc: text('refresh_token_enc'),
    keyId: text('key_id').notNull(),
    accessExpiresAt: ts('access_expires_at').notNull(),
    installedAt: ts('installed_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    version: integer('version').notNull().default(1),
    needsReauth: boolean('needs_reauth').notNull().default(false),
    refreshLeaseOwner: text('refresh_lease_owner'),
    refreshLeaseUntil: ts('refresh_lease_until'),
    /** See ./sqlite.ts: the platform-clock time of the install (token response `Date`). */
    platformInstalledAt: ts('platform_installed_at'),
  },
  (t) => [index('store_app_installations_access_expires_at_idx').on(t.accessExpiresAt)],
);

export const sessions = pgTable(
  'store_app_sessions',
  {
    sid: text('sid').primaryKey(),
    storeId: text('store_id'),
    data: jsonb('data').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('store_app_sessions_store_id_idx').on(t.storeId),
    index('store_app_sessions_expires_at_idx').on(t.expiresAt),
  ],
);

export const webhookDeliveries = pgTable(
  'store_app_webhook_deliveries',
  {
    webhookId: text('webhook_id').primaryKey(),
    topic: text('topic').notNull(),
    receivedAt: ts('received_at').notNull(),
  },
  (t) => [index('store_app_webhook_deliveries_received_at_idx').on(t.receivedAt)],
);

export const purgeAudit = pgTable(
  'store_app_purge_audit',
  {
    id: serial('id').primaryKey(),
    storeId: text('store_id').notNull(),
    purgedAt: ts('purged_at').notNull(),
    /** The uninstall event's own time (platform clock) when an event caused the purge. */
    eventAt: ts('event_at'),
    counts: jsonb('counts').notNull(),
  },
  (t) => [index('store_app_purge_audit_store_id_idx').on(t.storeId)],
);

/**
 * Ids that may be used once until they expire (launch token jti), shared by
 * every process on the database. Keyed by the id, not a store: no store data.
 */
export const claims = pgTable(
  'store_app_claims',
  {
    namespace: text('namespace').notNull(),
    id: text('id').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.namespace, t.id] }),
    index('store_app_claims_expires_at_idx').on(t.expiresAt),
  ],
);

/** The purge outbox; see ./sqlite.ts. */
export const pendingPurges = pgTable(
  'store_app_pending_purges',
  {
    eventId: text('event_id').primaryKey(),
    storeId: text('store_id').notNull(),
    eventAt: ts('event_at').notNull(),
    createdAt: ts('created_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastError: text('last_error'),
    kind: text('kind').notNull().default('purge'),
    leaseOwner: text('lease_owner'),
    leaseUntil: ts('lease_until'),
  },
  (t) => [index('store_app_pending_purges_next_attempt_at_idx').on(t.nextAttemptAt)],
);
