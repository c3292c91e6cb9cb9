/**
 * Issue 16, developer loop: `npm run dev` restarts on change, and the app and
 * the local platform keep their state across restarts. The template's own dev
 * entry runs in a child process with the settings a generated `.env` holds and
 * no STORE_PLATFORM_DB or DATABASE_URL (the defaults: `.dev/platform.db` and
 * `data/store-app.db` in the project). The install goes over real sockets the
 * way a browser does it (consent form included); then the process is
 * restarted by its watcher and stopped and started again by hand.
 */
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_STORE_URL,
  cleanEnv,
  devEnv,
  type LaidTemplate,
  prepareTemplate,
  type Running,
  root,
  run,
} from './helpers.js';

const SCOPES = 'read_products,read_orders,read_inventory,write_inventory,read_store_settings';
let laid: LaidTemplate | undefined;
let outDir: string;
let work: string;
let settings: Record<string, string>;
const running: Running[] = [];

beforeAll(async () => {
  laid = await prepareTemplate();
  outDir = laid.dist;
  work = mkdtempSync(join(tmpdir(), 'dev-restart-'));
  settings = await devEnv(SCOPES);
  // A project as create-store-app lays it out: the template's sources (so the test may
  // edit one) and node_modules holding the built kit and its dependencies.
  cpSync(join(laid.dir, 'src'), join(work, 'src'), { recursive: true });
  cpSync(join(laid.dir, 'package.json'), join(work, 'package.json'));
  mkdirSync(join(work, 'node_modules'));
  symlinkSync(root, join(work, 'node_modules', 'store-app-kit'), 'dir');
  for (const dep of ['express', 'drizzle-orm', 'pino-pretty']) {
    symlinkSync(join(root, 'node_modules', dep), join(work, 'node_modules', dep), 'dir');
  }
  // What create-store-app writes: the settings in .env, read by the dev entry.
  writeFileSync(
    join(work, '.env'),
    Object.entries(settings)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
  );
}, 120_000);

afterAll(async () => {
  for (const r of running) await r.stop();
  if (work) rmSync(work, { recursive: true, force: true });
  laid?.remove();
});

function start(args: string[]): Running {
  const r = run(args, work, cleanEnv());
  running.push(r);
  return r;
}

/** A browser's cookie jar for one origin. */
function jar() {
  const cookies = new Map<string, string>();
  return {
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    take(res: Response) {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const eq = pair!.indexOf('=');
        cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
      }
    },
  };
}

/** Install through the app's /auth, the platform's consent form, and the app's callback. */
async function install(storeId: string): Promise<string> {
  const app = jar();
  const platform = jar();
  const appGet = async (url: string) => {
    const res = await fetch(url, {
      redirect: 'manual',
      headers: { accept: 'text/html', cookie: app.header() },
    });
    app.take(res);
    return res;
  };
  const begin = await appGet(`${settings['STORE_APP_URL']}/auth?store_id=${storeId}`);
  expect(begin.status).toBe(302);
  const consent = await fetch(begin.headers.get('location')!, { headers: { accept: 'text/html' } });
  platform.take(consent);
  expect(consent.status).toBe(200);
  const requestId = /name="request_id" value="([^"]+)"/.exec(await consent.text())?.[1];
  expect(requestId).toBeTruthy();
  const origin = settings['STORE_AUTH_URL']!;
  const decision = await fetch(`${origin}/oauth/authorize/decision`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin,
      cookie: platform.header(),
    },
    body: new URLSearchParams({ request_id: requestId!, store_id: storeId, decision: 'approve' }),
  });
  expect(decision.status, await decision.clone().text()).toBe(302);
  const callback = await appGet(decision.headers.get('location')!);
  expect(callback.status).toBe(302);
  const session = await fetch(`${settings['STORE_APP_URL']}/auth/session-token`, {
    headers: { accept: 'application/json', cookie: app.header() },
  });
  expect(session.status).toBe(200);
  return ((await session.json()) as { token: string }).token;
}

interface ApiAnswer {
  status: number;
  body: { data: Array<{ id: string; productId?: string; note?: string }> } & Record<
    string,
    unknown
  >;
}

async function api(token: string, path: string, init: RequestInit = {}): Promise<ApiAnswer> {
  const res = await fetch(`${settings['STORE_APP_URL']}${path}`, {
    ...init,
    headers: {
      accept: 'application/json',
      authorization: `Bearer ${token}`,
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
  });
  return {
    status: res.status,
    body: res.status === 204 ? null : ((await res.json()) as ApiAnswer['body']),
  } as ApiAnswer;
}

describe('npm run dev keeps its state', () => {
  let storeId: string;
  let token: string;
  let productId: string;

  it('restarts on a change (tsx watch, as the dev script runs it) with the same store, still installed, notes intact', {
    timeout: 180_000,
  }, async () => {
    // The template's own dev script, with tsx from this repository: its port check, then the
    // watcher.
    const script = (
      JSON.parse(readFileSync(join(work, 'package.json'), 'utf8')) as { scripts: { dev: string } }
    ).scripts.dev;
    const steps = script.split(' && ').map((step) => step.split(/\s+/));
    expect(steps.map(([bin]) => bin)).toEqual(['tsx', 'tsx']);
    const tsx = join(root, 'node_modules/tsx/dist/cli.mjs');
    const check = spawnSync(process.execPath, [tsx, ...steps[0]!.slice(1)], {
      cwd: work,
      env: cleanEnv(),
      encoding: 'utf8',
    });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const dev = start([tsx, ...steps[1]!.slice(1)]);
    storeId = (await dev.waitFor(ADMIN_STORE_URL))[1]!;
    expect(existsSync(join(work, '.dev', 'platform.db'))).toBe(true);
    expect(existsSync(join(work, 'data', 'store-app.db'))).toBe(true);

    token = await install(storeId);
    const products = await api(token, '/api/products');
    expect(products.status).toBe(200);
    productId = products.body.data[0]!.id;
    const saved = await api(token, `/api/products/${productId}/note`, {
      method: 'PUT',
      body: JSON.stringify({ note: 'Survives restarts' }),
    });
    expect(saved.status).toBe(200);

    // Editing a source file restarts the process.
    const mark = dev.output().length;
    appendFileSync(join(work, 'src', 'views', 'home.ts'), '\n// edited\n');
    const again = await dev.waitFor(ADMIN_STORE_URL, mark, 90_000);
    expect(again[1]).toBe(storeId);

    const notes = await api(token, '/api/notes');
    expect(notes.status).toBe(200);
    expect(notes.body.data).toMatchObject([{ productId, note: 'Survives restarts' }]);
    // Still installed: the app's stored tokens work against the restarted platform.
    const after = await api(token, '/api/products');
    expect(after.status).toBe(200);
    expect(after.body.data[0]!.id).toBe(productId);
    expect(await dev.stop()).not.toBeNull();
  });

  it('stop and start again: one store, one app registration, still installed', {
    timeout: 120_000,
  }, async () => {
    const dev = start([join(outDir, 'dev.js')]);
    expect((await dev.waitFor(ADMIN_STORE_URL))[1]).toBe(storeId);
    const notes = await api(token, '/api/notes');
    expect(notes.body.data).toMatchObject([{ productId, note: 'Survives restarts' }]);
    expect((await api(token, '/api/orders')).status).toBe(200);
    expect(await dev.stop()).toBe(0);

    const db = new Database(join(work, '.dev', 'platform.db'), { readonly: true });
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    expect(count('SELECT count(*) AS n FROM stores')).toBe(1);
    expect(count('SELECT count(*) AS n FROM platform_apps')).toBe(1);
    db.close();
  });

  it('a changed client secret against the kept platform fails at start, naming the fix and not the secret', {
    timeout: 60_000,
  }, async () => {
    const other = 'a-different-client-secret-0123456789';
    const r = spawnSync(process.execPath, [join(outDir, 'dev.js')], {
      cwd: work,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...cleanEnv(), STORE_APP_CLIENT_SECRET: other },
    });
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status).not.toBe(0);
    expect(out).toMatch(/PLATFORM_APP_EXISTS|already registered/);
    expect(out).toContain('same clientSecret');
    expect(out).not.toContain(other);
    expect(out).not.toContain(settings['STORE_APP_CLIENT_SECRET']!);
  });
});
