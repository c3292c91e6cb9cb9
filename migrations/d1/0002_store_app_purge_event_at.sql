-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
ALTER TABLE `store_app_purge_audit` ADD `event_at` integer;
