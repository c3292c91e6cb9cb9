-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
CREATE TABLE `store_app_claims` (
	`namespace` text NOT NULL,
	`id` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`namespace`, `id`)
);

CREATE INDEX `store_app_claims_expires_at_idx` ON `store_app_claims` (`expires_at`);
