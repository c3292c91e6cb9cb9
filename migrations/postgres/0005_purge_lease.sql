ALTER TABLE "store_app_pending_purges" ADD COLUMN "kind" text DEFAULT 'purge' NOT NULL;--> statement-breakpoint
ALTER TABLE "store_app_pending_purges" ADD COLUMN "lease_owner" text;--> statement-breakpoint
ALTER TABLE "store_app_pending_purges" ADD COLUMN "lease_until" timestamp with time zone;