CREATE TABLE `store_app_claims` (
	`namespace` varchar(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`id` varchar(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`expires_at` datetime(3) NOT NULL,
	CONSTRAINT `store_app_claims_namespace_id_pk` PRIMARY KEY(`namespace`,`id`)
);
--> statement-breakpoint
CREATE TABLE `store_app_installations` (
	`store_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`scopes` text NOT NULL,
	`access_token_enc` text NOT NULL,
	`refresh_token_enc` text,
	`key_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`access_expires_at` datetime(3) NOT NULL,
	`installed_at` datetime(3) NOT NULL,
	`updated_at` datetime(3) NOT NULL,
	`version` int NOT NULL DEFAULT 1,
	`needs_reauth` boolean NOT NULL DEFAULT false,
	`refresh_lease_owner` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
	`refresh_lease_until` datetime(3),
	`platform_installed_at` datetime(3),
	CONSTRAINT `store_app_installations_store_id` PRIMARY KEY(`store_id`)
);
--> statement-breakpoint
CREATE TABLE `store_app_pending_purges` (
	`event_id` varchar(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`store_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`event_at` datetime(3) NOT NULL,
	`created_at` datetime(3) NOT NULL,
	`attempts` int NOT NULL DEFAULT 0,
	`next_attempt_at` datetime(3) NOT NULL,
	`last_error` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
	CONSTRAINT `store_app_pending_purges_event_id` PRIMARY KEY(`event_id`)
);
--> statement-breakpoint
CREATE TABLE `store_app_purge_audit` (
	`id` int AUTO_INCREMENT NOT NULL,
	`store_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`purged_at` datetime(3) NOT NULL,
	`event_at` datetime(3),
	`counts` json NOT NULL,
	CONSTRAINT `store_app_purge_audit_id` PRIMARY KEY(`id`)
);
--> statement-breakpoint
CREATE TABLE `store_app_sessions` (
	`sid` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`store_id` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
	`data` json NOT NULL,
	`expires_at` datetime(3) NOT NULL,
	CONSTRAINT `store_app_sessions_sid` PRIMARY KEY(`sid`)
);
--> statement-breakpoint
CREATE TABLE `store_app_webhook_deliveries` (
	`webhook_id` varchar(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`topic` varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
	`received_at` datetime(3) NOT NULL,
	CONSTRAINT `store_app_webhook_deliveries_webhook_id` PRIMARY KEY(`webhook_id`)
);
--> statement-breakpoint
CREATE INDEX `store_app_claims_expires_at_idx` ON `store_app_claims` (`expires_at`);--> statement-breakpoint
CREATE INDEX `store_app_installations_access_expires_at_idx` ON `store_app_installations` (`access_expires_at`);--> statement-breakpoint
CREATE INDEX `store_app_pending_purges_next_attempt_at_idx` ON `store_app_pending_purges` (`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `store_app_purge_audit_store_id_idx` ON `store_app_purge_audit` (`store_id`);--> statement-breakpoint
CREATE INDEX `store_app_sessions_store_id_idx` ON `store_app_sessions` (`store_id`);--> statement-breakpoint
CREATE INDEX `store_app_sessions_expires_at_idx` ON `store_app_sessions` (`expires_at`);--> statement-breakpoint
CREATE INDEX `store_app_webhook_deliveries_received_at_idx` ON `store_app_webhook_deliveries` (`received_at`);