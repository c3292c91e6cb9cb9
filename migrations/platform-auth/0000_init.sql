CREATE TABLE `platform_apps` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`client_id` text NOT NULL,
	`client_secret` text NOT NULL,
	`webhook_secret` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`webhook_url` text NOT NULL,
	`app_url` text NOT NULL,
	`scopes` text NOT NULL,
	`tier` text NOT NULL,
	`rate_per_minute` integer,
	`rate_concurrent` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `platform_apps_client_id_unique` ON `platform_apps` (`client_id`);--> statement-breakpoint
CREATE TABLE `platform_auth_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`store_id` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`scopes` text NOT NULL,
	`code_challenge` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `platform_installations` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`store_id` text NOT NULL,
	`scopes` text NOT NULL,
	`installed_at` integer NOT NULL,
	`uninstalled_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `platform_installations_app_store_idx` ON `platform_installations` (`app_id`,`store_id`);--> statement-breakpoint
CREATE TABLE `platform_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`kind` text NOT NULL,
	`app_id` text NOT NULL,
	`store_id` text NOT NULL,
	`scopes` text NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	`code_hash` text,
	`rotated_at` integer,
	`grace_used` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `platform_tokens_hash_idx` ON `platform_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `platform_tokens_app_store_idx` ON `platform_tokens` (`app_id`,`store_id`);--> statement-breakpoint
CREATE INDEX `platform_tokens_code_idx` ON `platform_tokens` (`code_hash`);--> statement-breakpoint
CREATE TABLE `platform_webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`app_id` text NOT NULL,
	`store_id` text NOT NULL,
	`topic` text NOT NULL,
	`url` text NOT NULL,
	`body` text NOT NULL,
	`status` text NOT NULL,
	`attempts` text DEFAULT '[]' NOT NULL,
	`next_attempt_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `platform_webhook_deliveries_app_idx` ON `platform_webhook_deliveries` (`app_id`);