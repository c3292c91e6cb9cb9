ALTER TABLE `store_app_pending_purges` ADD `kind` text DEFAULT 'purge' NOT NULL;--> statement-breakpoint
ALTER TABLE `store_app_pending_purges` ADD `lease_owner` text;--> statement-breakpoint
ALTER TABLE `store_app_pending_purges` ADD `lease_until` integer;