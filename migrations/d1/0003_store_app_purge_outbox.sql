-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
CREATE TABLE `store_app_pending_purges` (
	`event_id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`event_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text
);

CREATE INDEX `store_app_pending_purges_next_attempt_at_idx` ON `store_app_pending_purges` (`next_attempt_at`);

ALTER TABLE `store_app_installations` ADD `platform_installed_at` integer;
