/**
 * The Worker: `export default` is what wrangler deploys (`main` in wrangler.toml).
 * `createWorker` builds the kit on an isolate's first request, answers the kit's routes
 * (install, callback, session token, webhooks, /healthz) and hands every other request
 * to the app's Hono routes (src/app.ts). Its `scheduled()` runs on the Cron Trigger:
 * one pass of the token refresh sweep and the purge outbox (nothing runs between
 * requests on Workers).
 */
import type { Hono } from 'hono';
import { d1Adapter } from 'store-app-kit/storage/d1';
import { createWorker, type WorkersStoreAppKit } from 'store-app-kit/workers';
import { type AppEnv, createApp } from './app.js';
import type { Env } from './env.js';
import { purgeNotes } from './notes.js';

/** The app's routes per kit (one kit per isolate). */
const apps = new WeakMap<WorkersStoreAppKit, Hono<AppEnv>>();

export default createWorker<Env>({
  // Every other setting comes from the Worker's variables and secrets.
  options: (env) => ({
    // The kit's migrations are applied by `wrangler d1 migrations apply` (README); the
    // adapter checks at start that they are, and names the missing ones if not.
    storage: { adapter: d1Adapter(env.DB) },
    // The uninstall purge deletes the store's notes in the batch that deletes its tokens.
    onPurge: purgeNotes,
    // For the health check: 200 while D1 answers, 503 when not ({ status } only).
    health: { path: '/healthz' },
  }),
  fetch(request, env, ctx, kit) {
    let app = apps.get(kit);
    if (!app) {
      app = createApp(kit, env);
      apps.set(kit, app);
    }
    return app.fetch(request, env, ctx as Parameters<Hono<AppEnv>['fetch']>[2]);
  },
});
