/**
 * What importing the kit costs an app: the main entry loads no database
 * driver and nothing of the local platform; the configured dialect's driver is
 * imported when the database opens, the other one never; a driver that is not
 * installed fails at start naming the package. Each case is a fresh node
 * process over the built dist/ (as the published package runs).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { run } from '../helpers/run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const hook = join(root, 'test', 'packaging', 'record-imports.mjs');
const work = mkdtempSync(join(tmpdir(), 'import-graph-'));
let pgDb: TempDatabase | undefined;
let myDb: TempDatabase | undefined;
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await pgDb?.drop();
  await myDb?.drop();
});
let n = 0;

/** Runs `script` (ESM) in a fresh node; returns its stdout and every URL it resolved. */
async function runNode(script: string, env: Record<string, string> = {}) {
  const record = join(work, `imports-${++n}.txt`);
  const r = await run(
    process.execPath,
    ['--import', pathToFileURL(hook).href, '--input-type=module', '-e', script],
    { cwd: root, env: { ...process.env, RECORD_IMPORTS: record, ...env }, timeout: 30_000 },
  );
  let urls: string[] = [];
  try {
    urls = readFileSync(record, 'utf8').split('\n').filter(Boolean);
  } catch {}
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, urls };
}

const dist = pathToFileURL(join(root, 'dist')).href;
const loaded = (urls: string[], pkg: string) =>
  urls.some((u) => u.includes(`/node_modules/${pkg}/`));
/** Whether Drizzle's schema builder of a dialect (`pg-core`, `mysql-core`, `sqlite-core`) was loaded. */
const core = (urls: string[], name: string) =>
  urls.some((u) => u.includes(`/node_modules/drizzle-orm/${name}/`));

describe('main entry import graph', () => {
  it('importing store-app-kit loads neither database driver nor the local platform', async () => {
    const r = await runNode(`await import('store-app-kit'); console.log('ok');`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.urls.some((u) => u.startsWith(`${dist}/index.js`))).toBe(true);
    expect(loaded(r.urls, 'pg')).toBe(false);
    expect(loaded(r.urls, 'better-sqlite3')).toBe(false);
    expect(loaded(r.urls, 'mysql2')).toBe(false);
    expect(r.urls.filter((u) => u.startsWith(`${dist}/platform/`))).toEqual([]);
    expect(r.urls.some((u) => u.includes('drizzle-orm/node-postgres'))).toBe(false);
    // vitest is an optional peer of store-app-kit/testing only.
    expect(loaded(r.urls, 'vitest')).toBe(false);
    expect(r.urls.filter((u) => u.startsWith(`${dist}/testing/`))).toEqual([]);
    expect(r.urls.some((u) => u.includes('drizzle-orm/mysql2'))).toBe(false);
    expect(r.urls).not.toContain(`${dist}/storage/mysql.js`);
    // Drizzle's D1 driver only through its own entry (store-app-kit/storage/d1).
    expect(r.urls.some((u) => u.includes('drizzle-orm/d1/'))).toBe(false);
    expect(r.urls.filter((u) => u.startsWith(`${dist}/storage/d1/`))).toEqual([]);
  });

  it("store-app-kit/storage/d1 loads Drizzle's D1 driver and no Node module, driver or kit runtime", async () => {
    const r = await runNode(
      `const m = await import('store-app-kit/storage/d1');
       console.log(typeof m.d1Adapter, m.D1_MIGRATIONS.length > 0);`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('function true');
    expect(r.urls.some((u) => u.includes('drizzle-orm/d1/'))).toBe(true);
    for (const pkg of ['pg', 'better-sqlite3', 'mysql2', 'express', 'pino', 'jose', 'vitest']) {
      expect(loaded(r.urls, pkg), pkg).toBe(false);
    }
    // A Worker imports it: nothing of Node (node:* or a bare built-in) at module scope.
    expect(r.urls.filter((u) => u.startsWith('node:'))).toEqual([]);
    const own = r.urls.filter((u) => u.startsWith(`${dist}/`)).map((u) => u.slice(dist.length));
    expect(own.filter((u) => !/^\/(storage\/d1|storage\/schema|errors)\//.test(u))).toEqual([]);
  });

  it('store-app-kit/storage (for adapter authors) loads no driver, no Drizzle and no vitest', async () => {
    const r = await runNode(
      `const m = await import('store-app-kit/storage');
       console.log(typeof m.StorageError, m.STORAGE_ADAPTER_METHODS.length);`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^function \d+$/);
    for (const pkg of ['pg', 'better-sqlite3', 'drizzle-orm', 'vitest', 'express']) {
      expect(loaded(r.urls, pkg), pkg).toBe(false);
    }
  });

  it('store-app-kit/client loads the client and valibot only: no driver, no Express, no platform', async () => {
    const r = await runNode(
      `const m = await import('store-app-kit/client');
       const c = m.createStoreClient({ apiUrl: 'http://127.0.0.1:9/api/v1', storeId: 's', accessToken: 't' });
       console.log(typeof c.products.list, typeof c.session, typeof m.TokenRevokedError);`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('function function function');
    const heavy = ['pg', 'better-sqlite3', 'mysql2', 'drizzle-orm', 'express', 'express-session'];
    for (const pkg of [...heavy, 'helmet', 'pino', 'jose', 'vitest', '@valibot/to-json-schema']) {
      expect(loaded(r.urls, pkg), pkg).toBe(false);
    }
    const own = r.urls.filter((u) => u.startsWith(`${dist}/`)).map((u) => u.slice(dist.length));
    expect(own).toContain('/client/public.js');
    // core/: the one store-id rule (a leaf: no import of its own).
    expect(own.filter((u) => !/^\/(client|cache|errors|options|telemetry)\//.test(u))).toEqual([
      '/core/store-id.js',
    ]);
  });

  it('store-app-kit/testing/adapter-suite reaches vitest only, no driver and no kit runtime', () => {
    // vitest's API only loads inside a vitest run, so the graph is read from dist/ itself.
    const bare = new Set<string>();
    const files = new Set<string>();
    const visit = (file: string) => {
      if (files.has(file)) return;
      files.add(file);
      // Without comments: JSDoc examples show imports that are not made.
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      for (const [, spec] of code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
        if (spec!.startsWith('.')) visit(join(dirname(file), spec!));
        else bare.add(spec!);
      }
    };
    visit(join(root, 'dist', 'testing', 'adapter-suite.js'));
    expect([...bare].sort()).toEqual(['node:crypto', 'vitest']);
    // The contract is imported for its types only: nothing of storage at run time.
    expect([...files].map((f) => f.slice(join(root, 'dist').length)).sort()).toEqual([
      '/testing/adapter-suite.js',
      '/testing/storage-suite.js',
    ]);
  });

  it('store-app-kit/testing loads outside vitest: no vitest, no driver, no Express, no platform', async () => {
    // A plain node process, as node:test or jest users run it.
    const r = await runNode(
      `const m = await import('store-app-kit/testing');
       console.log(typeof m.installStore, typeof m.sendWebhook);`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('function function');
    for (const pkg of ['vitest', 'pg', 'better-sqlite3', 'mysql2', 'drizzle-orm', 'express']) {
      expect(loaded(r.urls, pkg), pkg).toBe(false);
    }
    const own = r.urls.filter((u) => u.startsWith(`${dist}/`)).map((u) => u.slice(dist.length));
    expect(own).toContain('/testing/helpers.js');
    // Only the signing function of the platform (node:crypto), never the platform itself.
    expect(own.filter((u) => u.startsWith('/platform/'))).toEqual(['/platform/webhooks/sign.js']);
  });

  /** A fresh process that builds a kit on SQLite, runs `body`, prints what it prints. */
  const withKit = (file: string, body: string) =>
    runNode(
      `const { randomBytes } = await import('node:crypto');
       const { createRequire } = await import('node:module');
       const { storeApp } = await import('store-app-kit');
       const kit = await storeApp({
         appUrl: 'http://127.0.0.1:3000',
         oauth: { clientId: 'c', clientSecret: randomBytes(24).toString('base64url'), scopes: ['read_products'], authUrl: 'http://127.0.0.1:9' },
         storage: { databaseUrl: ${JSON.stringify(`file:${join(work, file)}`)}, encryptionKeys: [randomBytes(32).toString('base64url')] },
         session: { secret: randomBytes(32).toString('base64url') },
         webhooks: { secrets: ['whsec_' + randomBytes(32).toString('base64')] },
         refresh: { sweepIntervalMs: 0 },
         health: { path: '/healthz' },
         logger: { level: 'error' },
       });
       ${body}
       // CommonJS packages (express, express-session, helmet) are loaded by require:
       // the ESM hook does not see them, require.cache does.
       const cjs = Object.keys(createRequire(import.meta.url).cache);
       console.log(JSON.stringify(cjs.filter((f) => f.includes('/node_modules/'))));
       await kit.close();`,
    );
  /** The packages of `files` (CommonJS paths) and `urls` (ESM URLs) among `pkgs`. */
  const loadedOf = (r: { stdout: string; urls: string[] }, pkgs: string[]) => {
    const cjs = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
    return pkgs.filter(
      // A module of it, not its package.json (the Express version check reads that).
      (pkg) =>
        loaded(r.urls, pkg) ||
        cjs.some((f) => f.includes(`/node_modules/${pkg}/`) && !f.endsWith('/package.json')),
    );
  };
  // express-session is not among them: the kit's browser session is its own (issue 32).
  const expressFamily = ['express', 'helmet'];

  it('importing store-app-kit loads none of the HTTP and storage stack; storeApp() loads it', async () => {
    const heavy = ['express', 'helmet', 'pino', 'drizzle-orm', 'jose'];
    const only = await runNode(
      `const kit = await import('store-app-kit'); console.log(typeof kit.storeApp, typeof kit.verify, kit.SESSION_REQUIRED);`,
    );
    expect(only.status, only.stderr).toBe(0);
    expect(only.stdout.trim()).toBe('function function SESSION_REQUIRED');
    expect(heavy.filter((pkg) => loaded(only.urls, pkg))).toEqual([]);
    // Telemetry rides with the receiver and the token manager, which storeApp() loads.
    expect(loaded(only.urls, '@opentelemetry/api')).toBe(false);

    const started = await withKit(
      'entry-app.db',
      'console.log(kit.dialect, typeof kit.middleware());',
    );
    expect(started.status, started.stderr).toBe(0);
    expect(started.stdout.trim().split('\n')[0]).toBe('sqlite function');
    // kit.middleware() is a plain function over the app's own Express: the kit loads
    // neither express nor helmet for it (the app has loaded its express already).
    expect(loadedOf(started, heavy)).toEqual(['pino', 'drizzle-orm', 'jose']);
    // A guest never brings its own express-session into the host app.
    expect(loadedOf(started, ['express-session'])).toEqual([]);
    expect(loaded(started.urls, 'pg')).toBe(false);
    expect(loaded(started.urls, 'mysql2')).toBe(false);
  });

  it('an app on kit.fetch and kit.authenticate only never loads express, express-session or helmet', async () => {
    const r = await withKit(
      'fetch-only.db',
      `const health = await kit.fetch(new Request('http://127.0.0.1:3000/healthz'), { remoteAddress: '127.0.0.1' });
       const begin = await kit.fetch(new Request('http://127.0.0.1:3000/auth?store_id=6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10'), { remoteAddress: '127.0.0.1' });
       const denied = await kit.authenticate(new Request('http://127.0.0.1:3000/api/x'));
       const page = kit.secureResponse(new Request('http://127.0.0.1:3000/'), new Response('<p>hi</p>'));
       console.log(health.status, begin.status, denied.status, page.headers.get('x-content-type-options'));`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim().split('\n')[0]).toBe('200 302 401 nosniff');
    expect(loadedOf(r, expressFamily)).toEqual([]);
    // The kit itself was loaded (the check would pass vacuously otherwise).
    expect(r.urls.some((u) => u.startsWith(`${dist}/shells/fetch/`))).toBe(true);
  });

  it("the Express shell is built on the first kit.authenticated(): Express's version checked, no module of the family loaded", async () => {
    const r = await withKit('express-late.db', 'kit.authenticated();');
    expect(r.status, r.stderr).toBe(0);
    const cjs = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
    // The version check (Express 4 fails at start) reads express's package.json only.
    expect(cjs.some((f) => f.endsWith('/node_modules/express/package.json'))).toBe(true);
    expect(loadedOf(r, expressFamily)).toEqual([]);
  });

  it("a SQLite app's storeApp() loads no other dialect's Drizzle schema builder", async () => {
    const started = await runNode(
      `const { randomBytes } = await import('node:crypto');
       const { storeApp } = await import('store-app-kit');
       const kit = await storeApp({
         appUrl: 'http://127.0.0.1:3000',
         oauth: { clientId: 'c', clientSecret: randomBytes(24).toString('base64url'), scopes: ['read_products'], authUrl: 'http://127.0.0.1:9' },
         storage: { databaseUrl: ${JSON.stringify(`file:${join(work, 'dialect-app.db')}`)}, encryptionKeys: [randomBytes(32).toString('base64url')] },
         session: { secret: randomBytes(32).toString('base64url') },
         webhooks: { secrets: ['whsec_' + randomBytes(32).toString('base64')] },
         refresh: { sweepIntervalMs: 0 },
       });
       kit.middleware();
       await kit.close(); console.log(kit.dialect);`,
    );
    expect(started.status, started.stderr).toBe(0);
    expect(started.stdout.trim()).toBe('sqlite');
    expect(core(started.urls, 'sqlite-core')).toBe(true);
    // drizzle-orm's own core reaches 43 pg-core column modules whatever the dialect;
    // the schema builder's entry (another 29) and the kit's Postgres schema stay out.
    expect(started.urls.some((u) => u.endsWith('/drizzle-orm/pg-core/index.js'))).toBe(false);
    expect(started.urls.some((u) => u.startsWith(`${dist}/storage/schema/postgres.js`))).toBe(
      false,
    );
    expect(core(started.urls, 'mysql-core')).toBe(false);
  });

  /** A fresh process that opens storage on `databaseUrl` and prints its dialect. */
  const openStorageIn = (databaseUrl: string) =>
    runNode(
      `const { createStorage } = await import('${dist}/storage/index.js');
       const { generateKey } = await import('${dist}/crypto/index.js');
       const s = await createStorage({ databaseUrl: ${JSON.stringify(databaseUrl)}, encryptionKeys: [generateKey()] });
       await s.close(); console.log(s.dialect);`,
    );

  it('a SQLite database loads better-sqlite3 and never pg', async () => {
    const file = join(work, 'app.db');
    const r = await openStorageIn(file);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('sqlite');
    expect(loaded(r.urls, 'better-sqlite3')).toBe(true);
    expect(loaded(r.urls, 'pg')).toBe(false);
    expect(loaded(r.urls, 'mysql2')).toBe(false);
  });

  it('a Postgres database loads pg and never better-sqlite3', async () => {
    pgDb = await createTempDatabase('import_graph');
    const url = pgDb.url;
    const r = await openStorageIn(url);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('postgres');
    expect(loaded(r.urls, 'pg')).toBe(true);
    expect(core(r.urls, 'pg-core')).toBe(true);
    expect(core(r.urls, 'mysql-core')).toBe(false);
    expect(loaded(r.urls, 'better-sqlite3')).toBe(false);
    expect(loaded(r.urls, 'mysql2')).toBe(false);
  });

  it('a MySQL/MariaDB database loads mysql2 and neither pg nor better-sqlite3', async () => {
    myDb = await createTempMysqlDatabase('import_graph');
    const url = myDb.url.replace(/^mysql:/, 'mariadb:');
    const r = await openStorageIn(url);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('mysql');
    expect(loaded(r.urls, 'mysql2')).toBe(true);
    expect(loaded(r.urls, 'pg')).toBe(false);
    expect(loaded(r.urls, 'better-sqlite3')).toBe(false);
  });
});

describe('missing driver', () => {
  for (const [dialect, pkg, url] of [
    ['postgres', 'pg', 'postgres://127.0.0.1:5432/none'],
    ['sqlite', 'better-sqlite3', join(work, 'missing.db')],
    ['mysql', 'mysql2', 'mysql://app:s3cretpw@127.0.0.1:3306/none'],
  ] as const) {
    it(`a ${dialect} DATABASE_URL without ${pkg} installed fails at start naming the package`, async () => {
      const r = await runNode(
        `const { createStorage } = await import('${dist}/storage/index.js');
         const { generateKey } = await import('${dist}/crypto/index.js');
         try { await createStorage({ databaseUrl: ${JSON.stringify(url)}, encryptionKeys: [generateKey()] }); console.log('opened'); }
         catch (e) { console.log(JSON.stringify({ code: e.code, pkg: e.packageName, message: e.message })); }`,
        { HIDE_PACKAGES: pkg },
      );
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim());
      expect(out.code).toBe('DRIVER_MISSING');
      expect(out.pkg).toBe(pkg);
      expect(out.message).toContain(`npm install ${pkg}`);
      expect(out.message).toContain('DATABASE_URL');
      expect(out.message).not.toContain('s3cretpw');
    });
  }
});

/**
 * The layers of src/ (the local platform apart: a product of its own). A folder
 * imports only folders of lower layers, so no file or folder cycle can form; only
 * the Express shell imports the Express family; no function (the request path, the
 * composition and every module under them) has over 80 lines of its own.
 */
describe('source layers', () => {
  const src = join(root, 'src');
  /** Lowest first. Files at the top of src/ (the entries: index, kit, store-app, locals) are above all. */
  const LAYERS: readonly (readonly string[])[] = [
    ['errors', 'cache', 'telemetry', 'schemas', 'browser'],
    // crypto (primitives on every runtime) below core: the browser session signs with it.
    ['crypto'],
    ['options', 'background', 'core', 'openapi'],
    ['oauth', 'http', 'storage', 'client'],
    ['refresh', 'purge'],
    ['grant', 'health', 'webhooks', 'install', 'shutdown'],
    ['authenticated'],
    ['shells/express', 'shells/fetch'],
    // The Hono mount (store-app-kit/hono) over the Fetch shell's pieces.
    ['shells/hono'],
    ['config'],
    ['compose'],
    ['testing', 'cli', 'workers'],
  ];
  const layerOf = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));
  const ENTRY_LAYER = LAYERS.length;
  const EXPRESS_FAMILY = /^(express|express-session|helmet|@types\/express)(\/|$)/;

  const files: string[] = [];
  (function walk(dir: string) {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) files.push(path);
    }
  })(src);
  const own = (file: string) => relative(src, file);
  const isPlatform = (file: string) => own(file).startsWith('platform/');
  /** The folder a file belongs to (`shells/express`, `core`, …; `.` for the entries). */
  const folderOf = (file: string) => {
    const parts = own(file).split('/');
    if (parts.length === 1) return '.';
    return parts[0] === 'shells' ? `shells/${parts[1]}` : parts[0]!;
  };
  /** Every import of a file (static, dynamic, type-only): relative ones resolved. */
  const importsOf = (file: string) => {
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    const out = { files: [] as string[], packages: [] as string[] };
    for (const [, spec] of code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
      if (spec!.startsWith('.'))
        out.files.push(resolve(dirname(file), spec!.replace(/\.js$/, '.ts')));
      else out.packages.push(spec!);
    }
    return out;
  };
  const kit = files.filter((f) => !isPlatform(f));

  it('every folder of src/ has its place in the layer order', () => {
    const folders = new Set(kit.map(folderOf).filter((f) => f !== '.'));
    expect([...folders].filter((f) => !layerOf.has(f))).toEqual([]);
  });

  it('a folder imports only folders of lower layers (no file or folder cycle)', () => {
    const wrong: string[] = [];
    for (const file of kit) {
      const from = folderOf(file);
      const at = from === '.' ? ENTRY_LAYER : layerOf.get(from)!;
      for (const dep of importsOf(file).files) {
        if (isPlatform(dep) && own(file).startsWith('testing/')) continue;
        const to = folderOf(dep);
        if (to === from) continue;
        const depAt = to === '.' ? ENTRY_LAYER : (layerOf.get(to) ?? ENTRY_LAYER);
        if (depAt >= at) wrong.push(`${own(file)} -> ${own(dep)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('no two files of a folder import each other, even through others', () => {
    const graph = new Map(kit.map((f) => [f, importsOf(f).files.filter((d) => !isPlatform(d))]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...path.slice(path.indexOf(file)), file].map(own).join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const dep of graph.get(file) ?? []) visit(dep, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of kit) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('only src/shells/express/ imports the Express family (express, express-session, helmet)', () => {
    const outside = kit
      .filter((f) => folderOf(f) !== 'shells/express')
      .flatMap((f) =>
        importsOf(f)
          .packages.filter((p) => EXPRESS_FAMILY.test(p))
          .map((p) => `${own(f)}: ${p}`),
      );
    expect(outside).toEqual([]);
  });

  it('only src/shells/hono/ imports hono (an optional peer), and only its types', () => {
    const outside: string[] = [];
    for (const f of kit) {
      const code = readFileSync(f, 'utf8');
      for (const p of importsOf(f).packages.filter((p) => /^(hono|@hono\/)/.test(p))) {
        const typeOnly = new RegExp(`import type [^;]*from '${p}'`).test(code);
        if (folderOf(f) !== 'shells/hono' || !typeOnly) outside.push(`${own(f)}: ${p}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('no function in src/ (the local platform apart) has over 80 lines of its own', () => {
    const long: string[] = [];
    for (const file of kit) {
      const sf = ts.createSourceFile(
        file,
        readFileSync(file, 'utf8'),
        ts.ScriptTarget.ES2022,
        true,
      );
      const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
      const span = (n: ts.Node) => line(n.end) - line(n.getStart(sf)) + 1;
      /** The body's lines minus those of the functions nested in it. */
      const ownLines = (body: ts.Node) => {
        let lines = span(body);
        const nested = (n: ts.Node): void => {
          for (const c of n.getChildren(sf)) {
            const inner = ts.isFunctionLike(c) ? (c as { body?: ts.Node }).body : undefined;
            if (inner) lines -= span(inner);
            else nested(c);
          }
        };
        nested(body);
        return lines;
      };
      const visit = (n: ts.Node) => {
        const body = ts.isFunctionLike(n) ? (n as { body?: ts.Node }).body : undefined;
        if (body && ownLines(body) > 80) {
          const name = (n as { name?: ts.Node }).name?.getText(sf) ?? '(anonymous)';
          long.push(`${own(file)}:${line(n.getStart(sf)) + 1} ${name} (${ownLines(body)} lines)`);
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(long).toEqual([]);
  });
});
