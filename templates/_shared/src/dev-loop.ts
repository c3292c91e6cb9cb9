/**
 * `npm run dev`: the local Merchant Store Platform and this app in one process,
 * restarted by `tsx watch` when a source file changes.
 *
 * Both keep their state across restarts: the platform lives in
 * `.dev/platform.db` (gitignored; `STORE_PLATFORM_DB` moves it, `:memory:`
 * forgets it at every start) and the app in its own database (`DATABASE_URL`).
 * Registering the app again with the same credentials from `.env` keeps it,
 * so the store stays installed, and its products and notes stay.
 *
 * A start that cannot work stops with one line naming the fix, and exit 1: a
 * port already taken (which one, what it is for, the setting that moves it), a
 * setting missing from `.env`, a redirect URI the platform would refuse. The
 * last is checked by starting an install against the app itself, as the
 * admin's Install button does; the admin URL is printed only after that.
 *
 * The kit's logs are printed as readable lines (pino-pretty), not JSON; `LOG_LEVEL`
 * (e.g. `debug`) sets how much, as it does under `npm start`.
 */
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { dirname } from 'node:path';
import pretty from 'pino-pretty';
import type { StoreAppOptionsWithoutAdapter } from 'store-app-kit';
import { type Platform, startPlatform } from 'store-app-kit/platform';
import { loadDotEnv, requireEnv } from './env.js';
import { describeStartFailure } from './start-errors.js';

const DEV_STORE_NAME = 'Demo store';

/** A port `npm run dev` listens on, what it is for, and how to move it. */
export interface DevPort {
  what: string;
  host: string;
  port: number;
  /** The setting it comes from. */
  setting: string;
  /** Who usually holds it already. */
  holders: string;
  /** What to change in `.env`. */
  fix: string;
}

/** The app's URL as the kit uses it: origin and path, no trailing slash. */
function appBase(url: URL): string {
  return url.origin + url.pathname.replace(/\/+$/, '');
}

function urlPort(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** The two ports of `npm run dev`, from the settings (call `loadDotEnv()` first). */
export function devPorts(): { platform: DevPort; app: DevPort } {
  const appUrl = new URL(requireEnv('STORE_APP_URL'));
  const authUrl = new URL(requireEnv('STORE_AUTH_URL'));
  const port = process.env['PORT'];
  const platformPort = urlPort(authUrl);
  return {
    platform: {
      what: 'the local platform',
      host: authUrl.hostname,
      port: platformPort,
      setting: 'STORE_AUTH_URL',
      holders: 'another `npm run dev`, `npm run demo` or `npx store-platform`',
      fix: `set STORE_AUTH_URL in .env to a free port (e.g. ${authUrl.protocol}//${authUrl.hostname}:${platformPort + 1})`,
    },
    app: {
      what: 'the app',
      host: appUrl.hostname,
      port: port ? Number(port) : urlPort(appUrl),
      setting: port ? 'PORT' : 'STORE_APP_URL',
      holders: 'another `npm run dev` or `npm start`',
      fix: 'set PORT and the port of STORE_APP_URL in .env to a free one (the same port in both)',
    },
  };
}

/** One line for a port that cannot be listened on: the port, what for, the setting and the fix. */
export function portProblem(p: DevPort, err: NodeJS.ErrnoException): string {
  const where = `Port ${p.port} on ${p.host} (${p.what}, from ${p.setting})`;
  if (err.code === 'EADDRINUSE') {
    return `${where} is already in use, perhaps by ${p.holders}: stop it, or ${p.fix}, and start again.`;
  }
  if (err.code === 'EACCES') {
    return `${where} needs privileges this user lacks: ${p.fix} (above 1023), and start again.`;
  }
  return `${where} cannot be listened on (${err.code ?? err.message}): ${p.fix}, and start again.`;
}

/** Resolves once `server` listens on `port`/`host`; rejects with the listen error. */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Resolves when `port` on `host` can be listened on (and frees it again); rejects otherwise. */
function probe(p: DevPort): Promise<void> {
  const server = createNetServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: p.port, host: p.host, exclusive: true }, () => {
      server.close(() => resolve());
    });
  });
}

/** Both ports free, or the line of the first one taken. */
async function portsProblem(ports: { platform: DevPort; app: DevPort }): Promise<string | null> {
  for (const p of [ports.platform, ports.app]) {
    try {
      await probe(p);
    } catch (err) {
      return portProblem(p, err as NodeJS.ErrnoException);
    }
  }
  return null;
}

function fail(line: string): never {
  console.error(line);
  process.exit(1);
}

/**
 * `npm run dev`'s first step (`src/dev-check.ts`): both ports free, else one line and exit 1,
 * before `tsx watch` starts (which would otherwise keep waiting on a process that cannot
 * listen). The dev entry checks again at every start (a restart, `npm run demo`).
 */
export async function checkDevPorts(): Promise<void> {
  loadDotEnv();
  let ports: ReturnType<typeof devPorts>;
  try {
    ports = devPorts();
  } catch (err) {
    fail(describeStartFailure(err));
  }
  const problem = await portsProblem(ports);
  if (problem) fail(problem);
}

/** The app `runDev` serves: its HTTP server (not listening yet) and how to close the app. */
export interface DevApp {
  server: Server;
  close(): Promise<void>;
}

/**
 * Starts an install against the app itself, as the admin's Install button does, and hands the
 * platform the authorize request the app makes: the platform accepts it only when the
 * redirect URI the app sends is the one registered. Returns the line saying so, or throws
 * with the line naming both URIs and the setting.
 */
async function checkRegistration(
  base: string,
  platform: Platform,
  storeId: string,
  registered: string,
): Promise<string> {
  const beginUrl = `${base}/auth?store_id=${encodeURIComponent(storeId)}`;
  let begin: Response;
  try {
    begin = await fetch(beginUrl, { redirect: 'manual', signal: AbortSignal.timeout(5000) });
  } catch (err) {
    const why = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new Error(
      `Nothing answers at STORE_APP_URL (${base}: ${why}) though the app listens: set STORE_APP_URL in .env to the address the app listens on (its port is PORT's), and start again.`,
    );
  }
  const location = begin.headers.get('location');
  if (begin.status < 300 || begin.status >= 400 || !location?.startsWith(platform.authUrl)) {
    throw new Error(
      `GET ${beginUrl} answered ${begin.status}, not the redirect to the local platform this app sends: STORE_APP_URL (${base}) does not reach this app; set it in .env to the address the app listens on, and start again.`,
    );
  }
  const sent = new URL(location).searchParams.get('redirect_uri') ?? '(none)';
  const authorize = await fetch(location, {
    redirect: 'manual',
    signal: AbortSignal.timeout(5000),
  });
  if (authorize.status !== 200) {
    throw new Error(
      `The app sends redirect_uri ${sent}, but the local platform has ${registered} registered for STORE_APP_CLIENT_ID: the app builds it from STORE_APP_URL; make {STORE_APP_URL}/auth/callback the registered URI, and start again.`,
    );
  }
  return `  Redirect URI ${sent} is registered on the local platform (checked by starting an install).`;
}

/** The kit's logs as readable lines (time, level, message, fields), synchronous to stdout. */
function devLogger(): StoreAppOptionsWithoutAdapter['logger'] {
  return {
    destination: pretty({
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,module',
      singleLine: true,
      sync: true,
    }),
  };
}

/**
 * Runs the local platform and the app: `startApp` builds the app with the options given
 * (readable logs; call it after `.env` is loaded and the platform runs) and returns its
 * server, which is listened on here.
 */
export async function runDev(
  startApp: (options: StoreAppOptionsWithoutAdapter) => Promise<DevApp>,
): Promise<void> {
  loadDotEnv();
  let ports: ReturnType<typeof devPorts>;
  let appUrl: URL;
  try {
    ports = devPorts();
    appUrl = new URL(requireEnv('STORE_APP_URL'));
  } catch (err) {
    fail(describeStartFailure(err));
  }
  const problem = await portsProblem(ports);
  if (problem) fail(problem);

  const platformDb = process.env['STORE_PLATFORM_DB'] || '.dev/platform.db';
  if (platformDb !== ':memory:') mkdirSync(dirname(platformDb), { recursive: true });
  let platform: Platform;
  try {
    platform = await startPlatform({
      host: ports.platform.host,
      port: ports.platform.port,
      ...(platformDb === ':memory:' ? {} : { db: platformDb }),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    fail(
      code === 'EADDRINUSE' || code === 'EACCES'
        ? portProblem(ports.platform, err as NodeJS.ErrnoException)
        : describeStartFailure(err),
    );
  }

  const closers: Array<() => Promise<void>> = [() => platform.close()];
  /** Closes what runs, last started first; rejects with the first failure once all are done. */
  const closeAll = async () => {
    let failure: unknown;
    for (const close of closers.splice(0).reverse()) {
      await close().catch((err: unknown) => {
        failure ??= err;
      });
    }
    if (failure !== undefined) throw failure;
  };
  const stop = async (line: string): Promise<never> => {
    console.error(line);
    await closeAll().catch(() => {});
    process.exit(1);
  };

  const base = appBase(appUrl);
  const redirectUri = `${base}/auth/callback`;
  let storeId: string;
  let app: DevApp;
  try {
    platform.registerApp({
      name: process.env['STORE_APP_NAME'] ?? 'My store app',
      redirectUri,
      webhookUrl: `${base}/webhooks`,
      appUrl: base,
      scopes: requireEnv('STORE_APP_SCOPES'),
      clientId: requireEnv('STORE_APP_CLIENT_ID'),
      clientSecret: requireEnv('STORE_APP_CLIENT_SECRET'),
      webhookSecret: requireEnv('STORE_APP_WEBHOOK_SECRET'),
    });
    // The store of the previous run, if the platform kept it: installs and notes refer to it.
    storeId = (
      platform.listStores().find((s) => s.name === DEV_STORE_NAME) ??
      platform.createStore({ name: DEV_STORE_NAME, seed: true })
    ).storeId;
    app = await startApp({ logger: devLogger() });
  } catch (err) {
    return stop(describeStartFailure(err));
  }
  closers.push(() => app.close());

  const { server } = app;
  try {
    await listen(server, ports.app.port, ports.app.host);
  } catch (err) {
    return stop(portProblem(ports.app, err as NodeJS.ErrnoException));
  }
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        // The watcher restarts us at once: free the port now, keep-alive sockets included.
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );

  let registration: string;
  try {
    registration = await checkRegistration(base, platform, storeId, redirectUri);
  } catch (err) {
    return stop((err as Error).message);
  }
  console.log(
    `\n${registration}\n\n  Open the merchant admin and install the app:\n\n    ${platform.adminUrl}/stores/${storeId}\n`,
  );

  let stopping: Promise<void> | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopping ??= closeAll();
      stopping.then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
  }
}
