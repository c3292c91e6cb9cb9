/**
 * docs/runtimes.md's Next.js App Router files, read from the page
 * (scripts/doc-examples.js) and run as written, `store-app-kit` resolved to
 * src/: what a reader copies is what runs here. The Next.js server is not
 * installed (it is large); in its place a file-system router of a few lines
 * hands each route module's GET or POST a real `Request` made from a real
 * socket, as Next.js does, and writes back its `Response`. Against the local
 * platform: a failed start that is retried, install (begin → consent →
 * callback), an app route with a bearer app session token, the uninstall
 * webhook and its purge, and a reload of the modules (`next dev`) that keeps
 * the kit.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { extractExamples } from '../../scripts/doc-examples.js';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { sign } from '../../src/webhooks/verify.js';
import { Browser } from '../install/harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const dir = mkdtempSync(join(tmpdir(), 'sak-next-'));
const project = join(dir, 'app-project');

type Handler = (request: Request) => Promise<Response>;
interface LibModule {
  getKit(): Promise<StoreAppKit>;
  clientAddress(request: Request): string | undefined;
}

/** Writes the page's Next.js files into `project`; returns their paths. */
function writeDocumentedFiles(): string[] {
  const files = extractExamples(root).filter((e) => e.program === 'next' && e.file !== null);
  const srcIndex = pathToFileURL(join(root, 'src/index.ts')).href;
  for (const e of files) {
    const target = join(project, e.file!);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, e.code.replaceAll("from 'store-app-kit'", `from '${srcIndex}'`));
  }
  return files.map((e) => e.file!);
}

/** `app/auth/[[...kit]]/route.ts` → a matcher of URL paths, by Next.js's rules for these segments. */
function routeMatcher(file: string): (path: string) => boolean {
  const segments = file
    .replace(/^app\//, '')
    .replace(/\/?route\.ts$/, '')
    .split('/')
    // `app/route.ts` serves `/`: no segment.
    .filter((segment) => segment !== '');
  return (path) => {
    const parts = path.split('/').filter((p) => p !== '');
    for (const [i, segment] of segments.entries()) {
      if (segment.startsWith('[[...')) return true;
      if (segment.startsWith('[...')) return parts.length > i;
      if (parts[i] === undefined) return false;
      if (!segment.startsWith('[') && parts[i] !== segment) return false;
    }
    return parts.length === segments.length;
  };
}

/** Node's request as the standard Request a route handler receives. */
function toRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      headers.append(name, v);
    }
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null,
    duplex: 'half',
  } as RequestInit);
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) {
    if (name !== 'set-cookie') res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader('set-cookie', cookies);
  res.end(Buffer.from(await response.arrayBuffer()));
}

const ENV_NAMES = [
  'STORE_APP_URL',
  'STORE_APP_CLIENT_ID',
  'STORE_APP_CLIENT_SECRET',
  'STORE_APP_SCOPES',
  'STORE_AUTH_URL',
  'DATABASE_URL',
  'STORE_APP_ENCRYPTION_KEYS',
  'STORE_APP_SESSION_SECRET',
  'STORE_APP_WEBHOOK_SECRET',
  'BEHIND_ONE_PROXY',
] as const;
const savedEnv = Object.fromEntries(ENV_NAMES.map((n) => [n, process.env[n]]));
const kitSlot = globalThis as typeof globalThis & { storeAppKit?: Promise<StoreAppKit> };

describe('Next.js App Router route modules of docs/runtimes.md', () => {
  let platform: Platform;
  let server: Server;
  let appUrl: string;
  let clientId: string;
  let webhookSecret: string;
  let storeId: string;
  let routeFiles: string[];
  const failures: unknown[] = [];

  const importFile = async (file: string) => import(pathToFileURL(join(project, file)).href);

  beforeAll(async () => {
    const written = writeDocumentedFiles();
    routeFiles = written.filter((f) => f.startsWith('app/'));
    // What the steps below drive: the page must still hold them.
    expect(written).toEqual(expect.arrayContaining(['lib/store-app.ts']));
    expect(routeFiles.length).toBeGreaterThanOrEqual(3);
    const routes = routeFiles.map((file) => ({ file, matches: routeMatcher(file) }));

    server = createServer(async (req, res) => {
      const request = toRequest(req);
      const route = routes.find((r) => r.matches(new URL(request.url).pathname));
      if (!route) return writeResponse(res, new Response('no route', { status: 404 }));
      const handler = (await importFile(route.file))[request.method] as Handler | undefined;
      if (!handler) return writeResponse(res, new Response(null, { status: 405 }));
      try {
        await writeResponse(res, await handler(request));
      } catch (err) {
        // Next.js answers a throwing route handler with 500.
        failures.push(err);
        await writeResponse(res, new Response(null, { status: 500 }));
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    platform = await startPlatform({ logger: false });
    const creds = platform.registerApp({
      name: 'Next.js app',
      redirectUri: `${appUrl}/auth/callback`,
      webhookUrl: `${appUrl}/webhooks`,
      scopes: ['read_products'],
      appUrl,
    });
    clientId = creds.clientId;
    webhookSecret = creds.webhookSecret;
    storeId = platform.createStore({ name: 'Next.js store', seed: 2 }).storeId;
    // The configuration a Next.js deployment gives storeApp(): its environment. The
    // encryption keys come later, in the first test.
    Object.assign(process.env, {
      STORE_APP_URL: appUrl,
      STORE_APP_CLIENT_ID: creds.clientId,
      STORE_APP_CLIENT_SECRET: creds.clientSecret,
      STORE_APP_SCOPES: 'read_products',
      STORE_AUTH_URL: platform.authUrl,
      DATABASE_URL: join(dir, 'next.db'),
      STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
      STORE_APP_WEBHOOK_SECRET: creds.webhookSecret,
    });
    delete process.env['STORE_APP_ENCRYPTION_KEYS'];
  });

  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    const kit = kitSlot.storeAppKit;
    delete kitSlot.storeAppKit;
    await (await kit?.catch(() => undefined))?.close();
    await platform?.close();
    for (const name of ENV_NAMES) {
      if (savedEnv[name] === undefined) delete process.env[name];
      else process.env[name] = savedEnv[name];
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('a failed start is not kept: the next request starts the kit', async () => {
    const failed = await fetch(`${appUrl}/auth?store_id=${storeId}`, { redirect: 'manual' });
    expect(failed.status).toBe(500);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toContain('STORE_APP_ENCRYPTION_KEYS');

    process.env['STORE_APP_ENCRYPTION_KEYS'] = generateKey();
    const started = await fetch(`${appUrl}/auth?store_id=${storeId}`, { redirect: 'manual' });
    expect(started.status).toBe(302);
    expect(started.headers.get('location')!.startsWith(platform.authUrl)).toBe(true);
  });

  it('installs through the catch-all auth route and serves an app route to a bearer token', async () => {
    const browser = new Browser();
    const begun = await browser.get(`${appUrl}/auth?store_id=${storeId}`);
    expect(begun.status).toBe(302);
    const done = await browser.get(
      platform.approveInstall({ authorizeUrl: begun.headers.get('location')!, storeId }),
    );
    expect(done.status).toBe(302);
    const lib = (await importFile('lib/store-app.ts')) as LibModule;
    const kit = await lib.getKit();
    expect(await kit.installations.get(storeId)).not.toBeNull();

    const { token } = await kit.sessionToken(storeId);
    const products = await fetch(`${appUrl}/api/products`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(products.status).toBe(200);
    const page = (await products.json()) as { data: unknown[] };
    expect(page.data).toHaveLength(2);

    const anonymous = await fetch(`${appUrl}/api/products`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain('Bearer');
    // Under the catch-all but not a kit route: the kit leaves it, the route answers 404.
    expect((await fetch(`${appUrl}/auth/elsewhere`)).status).toBe(404);

    // The page the admin frames after the install (issue 32 item 10): served, not a 404.
    const home = await fetch(`${appUrl}/`, { headers: { authorization: `Bearer ${token}` } });
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('My app is installed');
    expect(home.headers.get('content-security-policy')).toContain('frame-ancestors');
  });

  it('the webhook route hands the signed bytes to the kit: a forgery is refused, the uninstall purges', async () => {
    // Signed with the app's secret, but over other bytes than those sent.
    const body = JSON.stringify({ storeId });
    const headers = sign(webhookSecret, 'msg_forged', Math.floor(Date.now() / 1000), body);
    const forged = await fetch(`${appUrl}/webhooks`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: `${body} `,
    });
    expect(forged.status).toBe(401);

    const { deliveryId } = platform.uninstall({ storeId, clientId });
    const [delivery] = await platform.waitForDeliveries({ clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    expect(delivery?.attempts.at(-1)?.status).toBe(200);
    const kit = await ((await importFile('lib/store-app.ts')) as LibModule).getKit();
    expect(await kit.installations.get(storeId)).toBeNull();
  });

  it('a reload of the modules (next dev) keeps the one kit', async () => {
    const before = (await importFile('lib/store-app.ts')) as LibModule;
    const kit = await before.getKit();
    vi.resetModules();
    const after = (await importFile('lib/store-app.ts')) as LibModule;
    expect(after).not.toBe(before);
    expect(await after.getKit()).toBe(kit);
  });

  it('reads X-Forwarded-For only behind the one proxy it is told of', async () => {
    const { clientAddress } = (await importFile('lib/store-app.ts')) as LibModule;
    const request = new Request(`${appUrl}/auth/callback`, {
      headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.7' },
    });
    delete process.env['BEHIND_ONE_PROXY'];
    expect(clientAddress(request)).toBeUndefined();
    process.env['BEHIND_ONE_PROXY'] = '1';
    // The entry the proxy appended, not the one the client wrote.
    expect(clientAddress(request)).toBe('198.51.100.7');
    expect(clientAddress(new Request(appUrl))).toBeUndefined();
  });
});
