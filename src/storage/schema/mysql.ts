/**
 * The kit's tables on MySQL / MariaDB. Column SQL names match ./sqlite.ts one
 * for one, so the repositories run on all three dialects. What differs, and why:
 * - Keys are VARCHAR with explicit lengths (an index on TEXT needs a prefix
 *   length) sized so the longest key fits InnoDB's 3072-byte index limit in
 *   utf8mb4, with a binary collation: the default `_ci` collations would make
 *   store `Acme` and store `acme` one row, and a webhook id one letter-case
 *   away from another a "duplicate" (Postgres and SQLite compare bytes).
 * - Times are DATETIME(3), written and read as UTC by Drizzle: a plain
 *   DATETIME drops the milliseconds, so a lease or claim expiring in 300 ms
 *   would compare as already expired (or 999 ms late).
 * - JSON is read back through JSON.parse when the server returns text
 *   (MariaDB's JSON is LONGTEXT; MySQL's is native and arrives parsed).
 */
import {
  boolean,
  customType,
  datetime,
  index,
  int,
  mysqlTable,
  primaryKey,
  text,
} from 'drizzle-orm/mysql-core';

const ts = (name: string) => datetime(name, { mode: 'date', fsp: 3 });

/** A key column: byte-compared UTF-8, at most `length` characters. */
const key = (name: string, length: number) =>
  customType<{ data: string; driverData: string }>({
    dataType: () => `varchar(${length}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
  })(name);

const json = customType<{ data: unknown; driverData: string }>({
  dataType: () => 'json',
  toDriver: (value) => JSON.stringify(value),
  fromDriver: (value) => (typeof value === 'string' ? JSON.parse(value) : value),
});

/** Store ids, session ids and key ids: the API client accepts store ids up to 255. */
const ID = 255;
/** Webhook delivery ids and claim ids: the kit accepts up to 256 characters. */
const EVENT_ID = 256;

export const installations = mysqlTable(
  'store_app_installations',
  {
    storeId: key('store_id', ID).primaryKey(),
    /** Space-separated, as OAuth writes scopes. */
    scopes: text('scopes').notNull(),
    accessTokenEnc: text('access_token_enc').notNull(),
    refreshTokenEnc: text('refresh_token_enc'),
    keyId: key('key_id', ID).notNull(),
    accessExpiresAt: ts('access_expires_at').notNull(),
    installedAt: ts('installed_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    version: int('version').notNull().default(1),
    needsReauth: boolean('needs_reauth').notNull().default(false),
    refreshLeaseOwner: key('refresh_lease_owner', ID),
    refreshLeaseUntil: ts('refresh_lease_until'),
    /** See ./sqlite.ts: the platform-clock time of the install (token response `Date`). */
    platformInstalledAt: ts('platform_installed_at'),
  },
  (t) => [index('store_app_installations_access_expires_at_idx').on(t.accessExpiresAt)],
);

export const sessions = mysqlTable(
  'store_app_sessions',
  {
    sid: key('sid', ID).primaryKey(),
    storeId: key('store_id', ID),
    data: json('data').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    index('store_app_sessions_store_id_idx').on(t.storeId),
    index('store_app_sessions_expires_at_idx').on(t.expiresAt),
  ],
);

export const webhookDeliveries = mysqlTable(
  'store_app_webhook_deliveries',
  {
    webhookId: key('webhook_id', EVENT_ID).primaryKey(),
    topic: key('topic', ID).notNull(),
    receivedAt: ts('received_at').notNull(),
  },
  (t) => [index('store_app_webhook_deliveries_received_at_idx').on(t.receivedAt)],
);

export const purgeAudit = mysqlTable(
  'store_app_purge_audit',
  {
    id: int('id').autoincrement().primaryKey(),
    storeId: key('store_id', ID).notNull(),
    purgedAt: ts('purged_at').notNull(),
    /** The uninstall event's own time (platform clock) when an event caused the purge. */
    eventAt: ts('event_at'),
    counts: json('counts').notNull(),
  },
  (t) => [index('store_app_purge_audit_store_id_idx').on(t.storeId)],
);

/** See ./sqlite.ts. 2 × 256 characters × 4 bytes stays under the 3072-byte key limit. */
export const claims = mysqlTable(
  'store_app_claims',
  {
    namespace: key('namespace', EVENT_ID).notNull(),
    id: key('id', EVENT_ID).notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.namespace, t.id] }),
    index('store_app_claims_expires_at_idx').on(t.expiresAt),
  ],
);

/** The purge outbox; see ./sqlite.ts. */
export const pendingPurges = mysqlTable(
  'store_app_pending_purges',
  {
    eventId: key('event_id', EVENT_ID).primaryKey(),
    storeId: key('store_id', ID).notNull(),
    eventAt: ts('event_at').notNull(),
    createdAt: ts('created_at').notNull(),
    attempts: int('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastError: key('last_error', ID),
    kind: key('kind', 16).notNull().default('purge'),
    leaseOwner: key('lease_owner', ID),
    leaseUntil: ts('lease_until'),
  },
  (t) => [index('store_app_pending_purges_next_attempt_at_idx').on(t.nextAttemptAt)],
);
