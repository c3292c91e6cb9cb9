/**
 * Test helpers for apps built on the kit: install a store the way a merchant
 * does (through the app's own /auth routes and a started local platform) and
 * send signed webhooks of any topic.
 */
import { randomUUID } from 'node:crypto';
import type { StoreApiClient } from '../client/index.js';
import { StoreAppError } from '../errors/index.js';
import { webhookHeaders } from '../platform/webhooks/sign.js';
import type { GenericWebhookPayload, WebhookTopics } from '../webhooks/types.js';

/** The slice of `startPlatform()`'s result the helpers use. */
export interface TestPlatform {
  createStore(input?: { name?: string; seed?: boolean | number }): { storeId: string };
  approveInstall(target: {
    authorizeUrl: string;
    storeId: string;
    grantScopes?: readonly string[];
  }): string;
}

/** The slice of the kit the helpers use. */
export interface TestKit {
  client(storeId: string): StoreApiClient;
  sessionToken(storeId: string): Promise<{ token: string; expiresAt: Date }>;
}

export interface InstallStoreOptions {
  /** A started local platform (`startPlatform()` from `store-app-kit/platform`) with the app registered. */
  platform: TestPlatform;
  /** The running app's public URL (`STORE_APP_URL`), e.g. `http://127.0.0.1:3000`. */
  appUrl: string;
  /** The app's kit (`await storeApp()`): gives the client and the app session token. */
  kit: TestKit;
  /** Install into this store; by default a new one is created. */
  storeId?: string;
  /** Seed a new store with products, customers and orders (`true`: 60 products). @default false */
  seed?: boolean | number;
  /** The merchant grants only these of the requested scopes. @default every requested scope */
  grantScopes?: readonly string[];
  /** The app's install route. @default '/auth' */
  authPath?: string;
}

export interface InstalledStore {
  storeId: string;
  /** An app session token for `Authorization: Bearer` on the app's own API. */
  sessionToken: string;
  /** The kit's typed client of the store. */
  client: StoreApiClient;
}

function fail(message: string): never {
  throw new StoreAppError('TEST_INSTALL_FAILED', message);
}

/**
 * Installs the app into a store as a merchant would: GET {appUrl}/auth, the
 * platform's consent (approved), the app's callback (token exchange, stored
 * encrypted). Returns the store id, an app session token and the client.
 * @example
 * const { storeId, sessionToken, client } = await installStore({ platform, appUrl, kit, seed: true });
 */
export async function installStore(options: InstallStoreOptions): Promise<InstalledStore> {
  const { platform, kit } = options;
  const appUrl = options.appUrl.replace(/\/+$/, '');
  const storeId =
    options.storeId ??
    platform.createStore({
      name: 'Test store',
      ...(options.seed === undefined ? {} : { seed: options.seed }),
    }).storeId;
  const jar = new Map<string, string>();
  const get = async (url: string) => {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      if (eq > 0) jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    await res.body?.cancel().catch(() => undefined);
    return res;
  };
  const begin = await get(
    `${appUrl}${options.authPath ?? '/auth'}?store_id=${encodeURIComponent(storeId)}`,
  );
  const authorizeUrl = begin.headers.get('location');
  if (begin.status !== 302 || !authorizeUrl) {
    fail(
      `GET ${options.authPath ?? '/auth'} answered ${begin.status}, not a redirect to the platform.`,
    );
  }
  const callback = platform.approveInstall({
    authorizeUrl,
    storeId,
    ...(options.grantScopes ? { grantScopes: options.grantScopes } : {}),
  });
  const done = await get(callback);
  if (done.status < 300 || done.status >= 400) {
    fail(`The app's install callback answered ${done.status}; see the app's log.`);
  }
  const { token } = await kit.sessionToken(storeId);
  return { storeId, sessionToken: token, client: kit.client(storeId) };
}

type PayloadOf<T extends string> = T extends keyof WebhookTopics
  ? Omit<WebhookTopics[T], 'type'>
  : Omit<GenericWebhookPayload, 'type'>;

export interface SendWebhookOptions<T extends string> {
  /** The app's webhook URL, e.g. `${appUrl}/webhooks`. */
  url: string;
  /** The app's webhook secret (`whsec_…`, STORE_APP_WEBHOOK_SECRET). */
  secret: string;
  /** The topic: the payload's `type`. Topics declared in `WebhookTopics` get typed payloads. */
  topic: T;
  /** The payload without `type` (added from `topic`). */
  payload: PayloadOf<T>;
  /** `webhook-id`; the same id twice is a redelivery. @default a random uuid */
  id?: string;
  /** Signing time in Unix seconds. @default now */
  timestamp?: number;
}

export interface SentWebhook {
  id: string;
  status: number;
  /** The response body (JSON when it is JSON, else text). */
  body: unknown;
}

/**
 * Sends one delivery signed as the platform signs (Standard Webhooks) to the app.
 * @example
 * await sendWebhook({ url: `${appUrl}/webhooks`, secret, topic: 'app.uninstalled', payload });
 */
export async function sendWebhook<T extends string>(
  options: SendWebhookOptions<T>,
): Promise<SentWebhook> {
  const id = options.id ?? randomUUID();
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const body = JSON.stringify({ type: options.topic, ...options.payload });
  const res = await fetch(options.url, {
    method: 'POST',
    headers: webhookHeaders(options.secret, id, timestamp, body),
    body,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  return { id, status: res.status, body: parsed };
}
