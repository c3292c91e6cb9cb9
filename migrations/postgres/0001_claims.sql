CREATE TABLE "store_app_claims" (
	"namespace" text NOT NULL,
	"id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "store_app_claims_namespace_id_pk" PRIMARY KEY("namespace","id")
);
--> statement-breakpoint
CREATE INDEX "store_app_claims_expires_at_idx" ON "store_app_claims" USING btree ("expires_at");