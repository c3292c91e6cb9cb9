-- The app's own table (src/notes.ts). The kit's tables come from its own files,
-- 0000_store_app_*.sql and on, copied here by `npm run db:kit-migrations`.
-- New migrations of the app: `npx wrangler d1 migrations create DB <name>`.
CREATE TABLE `product_notes` (
	`store_id` text NOT NULL,
	`product_id` text NOT NULL,
	`note` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`store_id`, `product_id`)
);
CREATE INDEX `product_notes_store_idx` ON `product_notes` (`store_id`);
