ALTER TABLE `store_app_pending_purges` ADD `kind` varchar(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT 'purge' NOT NULL;--> statement-breakpoint
ALTER TABLE `store_app_pending_purges` ADD `lease_owner` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;--> statement-breakpoint
ALTER TABLE `store_app_pending_purges` ADD `lease_until` datetime(3);