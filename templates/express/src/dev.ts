/**
 * `npm run dev`: the local Merchant Store Platform and this app in one process.
 * The app is registered on the platform with the credentials from `.env`, a
 * seeded store is created, and the one URL to open is printed: the admin page
 * where the merchant installs the app.
 */
import { startPlatform } from 'store-app-kit/platform';
import { createApp } from './app.js';
import { loadDotEnv, requireEnv } from './env.js';

loadDotEnv();
const appUrl = new URL(requireEnv('STORE_APP_URL'));
const authUrl = new URL(requireEnv('STORE_AUTH_URL'));

const platform = await startPlatform({
  host: authUrl.hostname,
  port: Number(authUrl.port || 80),
  db: process.env['STORE_PLATFORM_DB'],
});
await platform.registerApp({
  name: process.env['STORE_APP_NAME'] ?? 'My store app',
  redirectUri: new URL('/auth/callback', appUrl).href,
  webhookUrl: new URL('/webhooks', appUrl).href,
  appUrl: appUrl.origin,
  scopes: requireEnv('STORE_APP_SCOPES'),
  clientId: requireEnv('STORE_APP_CLIENT_ID'),
  clientSecret: requireEnv('STORE_APP_CLIENT_SECRET'),
  webhookSecret: requireEnv('STORE_APP_WEBHOOK_SECRET'),
});
const store = await platform.createStore({ name: 'Demo store', seed: true });

const { app, close } = await createApp();
const server = app.listen(
  Number(process.env['PORT'] ?? appUrl.port ?? 3000),
  appUrl.hostname,
  () => {
    console.log(
      `\n  Open the merchant admin and install the app:\n\n    ${platform.adminUrl}/stores/${store.storeId}\n`,
    );
  },
);

async function shutdown() {
  server.close();
  await close();
  await platform.close();
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void shutdown());
