/**
 * `npm run dev`: the local Merchant Store Platform (in this process) and the Worker in
 * workerd (Miniflare: the runtime `wrangler dev` runs), with the settings of `.dev.vars`.
 * The app is registered on the platform with those credentials, a seeded store is made
 * (kept in `.dev/platform.db` across runs, as D1's data is in `.wrangler/state`), and the
 * admin URL to install from is printed. Edit src/ and run it again (Ctrl-C, then up-arrow):
 * the Worker is bundled at every start.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { startPlatform } from 'store-app-kit/platform';
import { type LocalWorker, startWorker } from './worker.js';

const DEV_STORE_NAME = 'Demo store';

function fail(line: string): never {
  console.error(line);
  process.exit(1);
}

if (!existsSync('.dev.vars')) {
  fail(
    '.dev.vars is missing: copy .dev.vars.example to .dev.vars and fill it in (create-store-app wrote one with fresh secrets).',
  );
}
const vars = parseEnv(readFileSync('.dev.vars', 'utf8')) as Record<string, string>;
const need = (name: string): string =>
  vars[name] || fail(`${name} is not set in .dev.vars (see .dev.vars.example).`);

const appUrl = new URL(need('STORE_APP_URL'));
const authUrl = new URL(need('STORE_AUTH_URL'));
const base = appUrl.origin + appUrl.pathname.replace(/\/+$/, '');

mkdirSync('.dev', { recursive: true });
const platform = await startPlatform({
  host: authUrl.hostname,
  port: Number(authUrl.port || 80),
  db: process.env['STORE_PLATFORM_DB'] || '.dev/platform.db',
}).catch((err: NodeJS.ErrnoException) =>
  fail(
    err.code === 'EADDRINUSE'
      ? `Port ${authUrl.port} (the local platform, from STORE_AUTH_URL) is already in use: stop what holds it, or set STORE_AUTH_URL in .dev.vars to a free port.`
      : `The local platform did not start: ${err.message}`,
  ),
);
platform.registerApp({
  name: vars['STORE_APP_NAME'] ?? 'My store app',
  redirectUri: `${base}/auth/callback`,
  webhookUrl: `${base}/webhooks`,
  appUrl: base,
  scopes: need('STORE_APP_SCOPES'),
  clientId: need('STORE_APP_CLIENT_ID'),
  clientSecret: need('STORE_APP_CLIENT_SECRET'),
  webhookSecret: need('STORE_APP_WEBHOOK_SECRET'),
});
const { storeId } =
  platform.listStores().find((s) => s.name === DEV_STORE_NAME) ??
  platform.createStore({ name: DEV_STORE_NAME, seed: true });

let worker: LocalWorker;
try {
  worker = await startWorker({
    vars: { NODE_ENV: 'development', ...vars },
    host: appUrl.hostname,
    port: Number(appUrl.port || 80),
    persist: '.wrangler/state/v3/d1',
  });
} catch (err) {
  await platform.close();
  const e = err as NodeJS.ErrnoException;
  fail(
    e.code === 'EADDRINUSE'
      ? `Port ${appUrl.port} (the Worker, from STORE_APP_URL) is already in use: stop what holds it, or set STORE_APP_URL in .dev.vars to a free port.`
      : `The Worker did not start: ${e.message}`,
  );
}

console.log(
  `\n  The Worker runs at ${worker.url} (workerd, local D1), the local platform at ${platform.authUrl}.\n\n  Open the merchant admin and install the app:\n\n    ${platform.adminUrl}/stores/${storeId}\n`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.allSettled([worker.close(), platform.close()]).then(() => process.exit(0));
  });
}
