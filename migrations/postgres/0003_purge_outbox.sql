CREATE TABLE "store_app_pending_purges" (
	"event_id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"event_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"last_error" text
);
--> statement-breakpoint
ALTER TABLE "store_app_installations" ADD COLUMN "platform_installed_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "store_app_pending_purges_next_attempt_at_idx" ON "store_app_pending_purges" USING btree ("next_attempt_at");