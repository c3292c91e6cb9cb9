-- store-app-kit: generated from migrations/sqlite by scripts/generate-d1-migrations.js; do not edit.
DROP TABLE `store_app_oauth_states`;
