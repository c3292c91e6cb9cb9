/**
 * A real install setup: the local platform and an Express app with the kit,
 * each on its own port, and a tiny cookie-jar browser driving them with fetch.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { pino } from 'pino';
import type { StoreAppOptions } from '../../src/config/index.js';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { storeApp } from '../../src/store-app.js';

export const SCOPES = ['read_products', 'read_orders'];

/** A minimal browser: keeps cookies per name (honouring Path), never follows redirects itself. */
export class Browser {
  readonly cookies = new Map<string, { value: string; path: string }>();

  async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    const u = new URL(url);
    const cookie = [...this.cookies.entries()]
      .filter(([, c]) => u.pathname.startsWith(c.path))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ');
    const res = await fetch(url, {
      redirect: 'manual',
      headers: cookie ? { ...headers, cookie } : headers,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i).trim();
      const value = pair!.slice(i + 1).trim();
      const pathAttr = attrs.map((a) => a.trim()).find((a) => /^path=/i.test(a));
      const expired = attrs.some((a) => /^expires=Thu, 01 Jan 1970/i.test(a.trim()));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, { value, path: pathAttr ? pathAttr.slice(5) : '/' });
    }
    return res;
  }
}

export interface Harness {
  platform: Platform;
  kit: StoreAppKit;
  appUrl: string;
  clientId: string;
  clientSecret: string;
  storeId: string;
  logs: string[];
  server: Server;
  close(): Promise<void>;
}

export interface HarnessOptions {
  databaseUrl: string;
  /** Extra kit options merged over the defaults. */
  kit?: Partial<StoreAppOptions>;
  /** Use this platform instead of starting one. */
  platform?: Platform;
  /** Point the kit at another auth URL (e.g. a fake token endpoint). */
  authUrl?: string;
  /** Adds app routes after `kit.middleware()` (e.g. behind `kit.authenticated()`). */
  routes?: (app: express.Express, kit: StoreAppKit) => void;
}

export async function startHarness(opts: HarnessOptions): Promise<Harness> {
  const platform = opts.platform ?? (await startPlatform({ logger: false }));
  const app = express();
  const server = createServer(app);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const creds = platform.registerApp({
    name: 'Install test',
    redirectUri: `${appUrl}/auth/callback`,
    webhookUrl: `${appUrl}/webhooks`,
    scopes: [...SCOPES, 'write_products'],
    appUrl,
  });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const extra = opts.kit ?? {};
  // With `kit.storage.adapter` this is the custom-storage kit (dialect 'custom', no db):
  // the tests that pass one check exactly that.
  const kit = (await storeApp({
    ...extra,
    appUrl,
    environment: 'test',
    oauth: {
      clientId: creds.clientId,
      clientSecret: creds.clientSecret,
      scopes: SCOPES,
      authUrl: opts.authUrl ?? platform.authUrl,
      ...extra.oauth,
    },
    storage: {
      // An app-provided adapter decides where data lives: no database URL beside it.
      ...(extra.storage?.adapter ? {} : { databaseUrl: opts.databaseUrl }),
      encryptionKeys: [generateKey()],
      ...extra.storage,
    },
    session: { secret: randomBytes(32).toString('base64url'), ...extra.session },
    webhooks: { secrets: creds.webhookSecret, ...extra.webhooks },
    logger: extra.logger ?? { instance: pino({ level: 'trace' }, destination) },
  })) as StoreAppKit;
  app.use(kit.middleware());
  opts.routes?.(app, kit);
  // The store the browser's kit session acts for, read as an app reads it: through
  // kit.authenticated() (the kit's session is its own, never req.session).
  app.get('/', kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId });
  });
  const { storeId } = platform.createStore({ name: 'Test store' });
  return {
    platform,
    kit,
    appUrl,
    clientId: creds.clientId,
    clientSecret: creds.clientSecret,
    storeId,
    logs,
    server,
    async close() {
      server.closeAllConnections();
      server.close();
      await kit.close();
      if (!opts.platform) await platform.close();
    },
  };
}

/** Begin an install in `browser` and return the authorize URL the app redirected to. */
export async function begin(h: Harness, browser: Browser, storeId = h.storeId): Promise<string> {
  const res = await browser.get(`${h.appUrl}/auth?store_id=${storeId}`);
  if (res.status !== 302) throw new Error(`begin answered ${res.status}`);
  return res.headers.get('location')!;
}
