CREATE TABLE `store_app_pending_purges` (
	`event_id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`event_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `store_app_pending_purges_next_attempt_at_idx` ON `store_app_pending_purges` (`next_attempt_at`);--> statement-breakpoint
ALTER TABLE `store_app_installations` ADD `platform_installed_at` integer;