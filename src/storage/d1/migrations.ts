// Generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
// The same statements as migrations/d1/*.sql, for d1Adapter's applyMigrations.

/** The kit's D1 migrations in order: wrangler's file name and the statements. */
export const D1_MIGRATIONS: ReadonlyArray<{ name: string; statements: readonly string[] }> = [
  {
    name: "0000_store_app_init.sql",
    statements: [
      "CREATE TABLE `store_app_installations` (\n\t`store_id` text PRIMARY KEY NOT NULL,\n\t`scopes` text NOT NULL,\n\t`access_token_enc` text NOT NULL,\n\t`refresh_token_enc` text,\n\t`key_id` text NOT NULL,\n\t`access_expires_at` integer NOT NULL,\n\t`installed_at` integer NOT NULL,\n\t`updated_at` integer NOT NULL,\n\t`version` integer DEFAULT 1 NOT NULL,\n\t`needs_reauth` integer DEFAULT false NOT NULL,\n\t`refresh_lease_owner` text,\n\t`refresh_lease_until` integer\n);",
      "CREATE INDEX `store_app_installations_access_expires_at_idx` ON `store_app_installations` (`access_expires_at`);",
      "CREATE TABLE `store_app_oauth_states` (\n\t`state_hash` text PRIMARY KEY NOT NULL,\n\t`code_verifier_enc` text NOT NULL,\n\t`store_id` text,\n\t`browser_binding_enc` text NOT NULL,\n\t`retried` integer DEFAULT false NOT NULL,\n\t`return_to` text,\n\t`expires_at` integer NOT NULL,\n\t`created_at` integer NOT NULL\n);",
      "CREATE INDEX `store_app_oauth_states_store_id_idx` ON `store_app_oauth_states` (`store_id`);",
      "CREATE INDEX `store_app_oauth_states_expires_at_idx` ON `store_app_oauth_states` (`expires_at`);",
      "CREATE TABLE `store_app_purge_audit` (\n\t`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,\n\t`store_id` text NOT NULL,\n\t`purged_at` integer NOT NULL,\n\t`counts` text NOT NULL\n);",
      "CREATE INDEX `store_app_purge_audit_store_id_idx` ON `store_app_purge_audit` (`store_id`);",
      "CREATE TABLE `store_app_sessions` (\n\t`sid` text PRIMARY KEY NOT NULL,\n\t`store_id` text,\n\t`data` text NOT NULL,\n\t`expires_at` integer NOT NULL\n);",
      "CREATE INDEX `store_app_sessions_store_id_idx` ON `store_app_sessions` (`store_id`);",
      "CREATE INDEX `store_app_sessions_expires_at_idx` ON `store_app_sessions` (`expires_at`);",
      "CREATE TABLE `store_app_webhook_deliveries` (\n\t`webhook_id` text PRIMARY KEY NOT NULL,\n\t`topic` text NOT NULL,\n\t`received_at` integer NOT NULL\n);",
      "CREATE INDEX `store_app_webhook_deliveries_received_at_idx` ON `store_app_webhook_deliveries` (`received_at`);"
    ],
  },
  {
    name: "0001_store_app_claims.sql",
    statements: [
      "CREATE TABLE `store_app_claims` (\n\t`namespace` text NOT NULL,\n\t`id` text NOT NULL,\n\t`expires_at` integer NOT NULL,\n\tPRIMARY KEY(`namespace`, `id`)\n);",
      "CREATE INDEX `store_app_claims_expires_at_idx` ON `store_app_claims` (`expires_at`);"
    ],
  },
  {
    name: "0002_store_app_purge_event_at.sql",
    statements: [
      "ALTER TABLE `store_app_purge_audit` ADD `event_at` integer;"
    ],
  },
  {
    name: "0003_store_app_purge_outbox.sql",
    statements: [
      "CREATE TABLE `store_app_pending_purges` (\n\t`event_id` text PRIMARY KEY NOT NULL,\n\t`store_id` text NOT NULL,\n\t`event_at` integer NOT NULL,\n\t`created_at` integer NOT NULL,\n\t`attempts` integer DEFAULT 0 NOT NULL,\n\t`next_attempt_at` integer NOT NULL,\n\t`last_error` text\n);",
      "CREATE INDEX `store_app_pending_purges_next_attempt_at_idx` ON `store_app_pending_purges` (`next_attempt_at`);",
      "ALTER TABLE `store_app_installations` ADD `platform_installed_at` integer;"
    ],
  },
  {
    name: "0004_store_app_drop_oauth_states.sql",
    statements: [
      "DROP TABLE `store_app_oauth_states`;"
    ],
  },
  {
    name: "0005_store_app_purge_lease.sql",
    statements: [
      "ALTER TABLE `store_app_pending_purges` ADD `kind` text DEFAULT 'purge' NOT NULL;",
      "ALTER TABLE `store_app_pending_purges` ADD `lease_owner` text;",
      "ALTER TABLE `store_app_pending_purges` ADD `lease_until` integer;"
    ],
  },
];
