-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
CREATE TABLE `store_app_installations` (
	`store_id` text PRIMARY KEY NOT NULL,
	`scopes` text NOT NULL,
	`access_token_enc` text NOT NULL,
	`refresh_token_enc` text,
	`key_id` text NOT NULL,
	`access_expires_at` integer NOT NULL,
	`installed_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`needs_reauth` integer DEFAULT false NOT NULL,
	`refresh_lease_owner` text,
	`refresh_lease_until` integer
);

CREATE INDEX `store_app_installations_access_expires_at_idx` ON `store_app_installations` (`access_expires_at`);

CREATE TABLE `store_app_oauth_states` (
	`state_hash` text PRIMARY KEY NOT NULL,
	`code_verifier_enc` text NOT NULL,
	`store_id` text,
	`browser_binding_enc` text NOT NULL,
	`retried` integer DEFAULT false NOT NULL,
	`return_to` text,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL
);

CREATE INDEX `store_app_oauth_states_store_id_idx` ON `store_app_oauth_states` (`store_id`);

CREATE INDEX `store_app_oauth_states_expires_at_idx` ON `store_app_oauth_states` (`expires_at`);

CREATE TABLE `store_app_purge_audit` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`store_id` text NOT NULL,
	`purged_at` integer NOT NULL,
	`counts` text NOT NULL
);

CREATE INDEX `store_app_purge_audit_store_id_idx` ON `store_app_purge_audit` (`store_id`);

CREATE TABLE `store_app_sessions` (
	`sid` text PRIMARY KEY NOT NULL,
	`store_id` text,
	`data` text NOT NULL,
	`expires_at` integer NOT NULL
);

CREATE INDEX `store_app_sessions_store_id_idx` ON `store_app_sessions` (`store_id`);

CREATE INDEX `store_app_sessions_expires_at_idx` ON `store_app_sessions` (`expires_at`);

CREATE TABLE `store_app_webhook_deliveries` (
	`webhook_id` text PRIMARY KEY NOT NULL,
	`topic` text NOT NULL,
	`received_at` integer NOT NULL
);

CREATE INDEX `store_app_webhook_deliveries_received_at_idx` ON `store_app_webhook_deliveries` (`received_at`);
