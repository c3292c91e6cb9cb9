/**
 * `npm run dev`: the local Merchant Store Platform and this app in one process,
 * restarted by `tsx watch` when a server file or `.env` changes; the React UI is
 * served by Vite's dev server inside the app, with hot reload in the admin's iframe.
 *
 * Both keep their state across restarts: the platform lives in
 * `.dev/platform.db` (gitignored; `STORE_PLATFORM_DB` moves it, `:memory:`
 * forgets it at every start) and the app in its own database (`DATABASE_URL`).
 * Registering the app again with the same credentials from `.env` keeps it,
 * so the store stays installed, and its products and notes stay.
 */
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname } from 'node:path';
import { startPlatform } from 'store-app-kit/platform';
import { createApp } from './app.js';
import { viteFrontend } from './dev-frontend.js';
import { loadDotEnv, requireEnv } from './env.js';

const DEV_STORE_NAME = 'Demo store';

loadDotEnv();
const appUrl = new URL(requireEnv('STORE_APP_URL'));
const authUrl = new URL(requireEnv('STORE_AUTH_URL'));
const platformDb = process.env['STORE_PLATFORM_DB'] || '.dev/platform.db';
if (platformDb !== ':memory:') mkdirSync(dirname(platformDb), { recursive: true });

const platform = await startPlatform({
  host: authUrl.hostname,
  port: Number(authUrl.port || 80),
  ...(platformDb === ':memory:' ? {} : { db: platformDb }),
});
platform.registerApp({
  name: process.env['STORE_APP_NAME'] ?? 'My store app',
  redirectUri: new URL('/auth/callback', appUrl).href,
  webhookUrl: new URL('/webhooks', appUrl).href,
  appUrl: appUrl.origin,
  scopes: requireEnv('STORE_APP_SCOPES'),
  clientId: requireEnv('STORE_APP_CLIENT_ID'),
  clientSecret: requireEnv('STORE_APP_CLIENT_SECRET'),
  webhookSecret: requireEnv('STORE_APP_WEBHOOK_SECRET'),
});
// The store of the previous run, if the platform kept it: installs and notes refer to it.
const store =
  platform.listStores().find((s) => s.name === DEV_STORE_NAME) ??
  platform.createStore({ name: DEV_STORE_NAME, seed: true });

// Vite's hot-reload socket shares the app's server: one origin for the page, its modules
// and the socket, which the app's Content Security Policy allows in dev only.
const server = createServer();
const frontend = await viteFrontend(server, appUrl);
const { app, close } = await createApp({}, frontend);
server.on('request', app);
server.listen(Number(process.env['PORT'] ?? appUrl.port ?? 3000), appUrl.hostname, () => {
  console.log(
    `\n  Open the merchant admin and install the app:\n\n    ${platform.adminUrl}/stores/${store.storeId}\n`,
  );
});

let stopping: Promise<void> | undefined;
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    // The watcher restarts us at once: free both ports now, keep-alive sockets included.
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await frontend.close();
    await close();
    await platform.close();
  })();
  return stopping;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  });
}
