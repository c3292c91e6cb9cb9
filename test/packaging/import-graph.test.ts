/**
 * What importing the kit costs an app: the main entry loads no database
 * driver and nothing of the local platform; the configured dialect's driver is
 * imported when the database opens, the other one never; a driver that is not
 * installed fails at start naming the package. Each case is a fresh node
 * process over the built dist/ (as the published package runs).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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
    expect(own.filter((u) => !/^\/(client|cache|errors|options|telemetry)\//.test(u))).toEqual([]);
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

  it('importing store-app-kit loads none of the HTTP and storage stack; storeApp() loads it', async () => {
    const heavy = ['express', 'express-session', 'helmet', 'pino', 'drizzle-orm', 'jose'];
    const only = await runNode(
      `const kit = await import('store-app-kit'); console.log(typeof kit.storeApp, typeof kit.verify, kit.SESSION_REQUIRED);`,
    );
    expect(only.status, only.stderr).toBe(0);
    expect(only.stdout.trim()).toBe('function function SESSION_REQUIRED');
    expect(heavy.filter((pkg) => loaded(only.urls, pkg))).toEqual([]);
    // Telemetry rides with the receiver and the token manager, which storeApp() loads.
    expect(loaded(only.urls, '@opentelemetry/api')).toBe(false);

    const file = join(work, 'entry-app.db');
    const started = await runNode(
      `const { randomBytes } = await import('node:crypto');
       const { storeApp } = await import('store-app-kit');
       const kit = await storeApp({
         appUrl: 'http://127.0.0.1:3000',
         oauth: { clientId: 'c', clientSecret: randomBytes(24).toString('base64url'), scopes: ['read_products'], authUrl: 'http://127.0.0.1:9' },
         storage: { databaseUrl: ${JSON.stringify(`file:${file}`)}, encryptionKeys: [randomBytes(32).toString('base64url')] },
         session: { secret: randomBytes(32).toString('base64url') },
         webhooks: { secrets: ['whsec_' + randomBytes(32).toString('base64')] },
         refresh: { sweepIntervalMs: 0 },
         logger: { level: 'warn' },
       });
       console.log(kit.dialect, typeof kit.middleware());
       await kit.close();`,
    );
    expect(started.status, started.stderr).toBe(0);
    expect(started.stdout.trim()).toBe('sqlite function');
    expect(heavy.filter((pkg) => loaded(started.urls, pkg))).toEqual(heavy);
    expect(loaded(started.urls, 'pg')).toBe(false);
    expect(loaded(started.urls, 'mysql2')).toBe(false);
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
