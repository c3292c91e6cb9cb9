-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
ALTER TABLE `store_app_pending_purges` ADD `kind` text DEFAULT 'purge' NOT NULL;

ALTER TABLE `store_app_pending_purges` ADD `lease_owner` text;

ALTER TABLE `store_app_pending_purges` ADD `lease_until` integer;
