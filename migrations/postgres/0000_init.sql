CREATE TABLE "store_app_installations" (
	"store_id" text PRIMARY KEY NOT NULL,
	"scopes" text NOT NULL,
	"access_token_enc" text NOT NULL,
	"refresh_token_enc" text,
	"key_id" text NOT NULL,
	"access_expires_at" timestamp with time zone NOT NULL,
	"installed_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"needs_reauth" boolean DEFAULT false NOT NULL,
	"refresh_lease_owner" text,
	"refresh_lease_until" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "store_app_oauth_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"code_verifier_enc" text NOT NULL,
	"store_id" text,
	"browser_binding_enc" text NOT NULL,
	"retried" boolean DEFAULT false NOT NULL,
	"return_to" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_app_purge_audit" (
	"id" serial PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"purged_at" timestamp with time zone NOT NULL,
	"counts" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_app_sessions" (
	"sid" text PRIMARY KEY NOT NULL,
	"store_id" text,
	"data" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_app_webhook_deliveries" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"received_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "store_app_installations_access_expires_at_idx" ON "store_app_installations" USING btree ("access_expires_at");--> statement-breakpoint
CREATE INDEX "store_app_oauth_states_store_id_idx" ON "store_app_oauth_states" USING btree ("store_id");--> statement-breakpoint
CREATE INDEX "store_app_oauth_states_expires_at_idx" ON "store_app_oauth_states" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "store_app_purge_audit_store_id_idx" ON "store_app_purge_audit" USING btree ("store_id");--> statement-breakpoint
CREATE INDEX "store_app_sessions_store_id_idx" ON "store_app_sessions" USING btree ("store_id");--> statement-breakpoint
CREATE INDEX "store_app_sessions_expires_at_idx" ON "store_app_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "store_app_webhook_deliveries_received_at_idx" ON "store_app_webhook_deliveries" USING btree ("received_at");