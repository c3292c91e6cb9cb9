/**
 * The Worker's `env`: the D1 binding (wrangler.toml `[[d1_databases]]`), the variables
 * (`[vars]`) and the secrets (`wrangler secret put`, `.dev.vars` locally). The kit reads
 * every `STORE_APP_*` / `STORE_AUTH_URL` string of it as it reads Node's environment, and checks
 * them at the first request.
 */
import type { D1DatabaseBinding } from 'store-app-kit/storage/d1';

export interface Env {
  DB: D1DatabaseBinding;
  STORE_APP_URL: string;
  STORE_AUTH_URL: string;
  STORE_APP_SCOPES: string;
  STORE_APP_CLIENT_ID: string;
  /** Secrets: `wrangler secret put <NAME>`. */
  STORE_APP_CLIENT_SECRET: string;
  STORE_APP_WEBHOOK_SECRET: string;
  STORE_APP_ENCRYPTION_KEYS: string;
  STORE_APP_SESSION_SECRET: string;
  /** `debug`, `info` (default), `warn`, `error`, `silent`. */
  LOG_LEVEL?: string;
}
