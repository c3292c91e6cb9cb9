/**
 * The Worker in workerd on this machine, through Miniflare: what `npm run dev` and the
 * tests run. The Worker is bundled from src/index.ts as wrangler bundles it (esbuild, the
 * `workerd` export conditions, no Node built-ins) and runs on a local D1 database with the
 * migrations of migrations/ applied as `wrangler d1 migrations apply` applies them.
 * Node code: never bundled into the Worker.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A setting of wrangler.toml (`key = "value"`), so it stays the one source. */
export function wranglerSetting(key: string): string {
  const toml = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  const value = new RegExp(`^${key}\\s*=\\s*"([^"]*)"`, 'm').exec(toml)?.[1];
  if (value === undefined) throw new Error(`wrangler.toml has no ${key}`);
  return value;
}

/** src/index.ts bundled for workerd, as wrangler does it. */
export async function bundleWorker(): Promise<string> {
  const out = await build({
    entryPoints: [join(root, 'src', 'index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    target: 'es2022',
    write: false,
    logLevel: 'warning',
  });
  return out.outputFiles[0]!.text;
}

/** What a D1 database offers the migrations (Miniflare's `getD1Database`). */
interface D1 {
  prepare(sql: string): {
    bind(...values: unknown[]): unknown;
    all(): Promise<{ results: unknown[] }>;
  };
  batch(statements: unknown[]): Promise<unknown>;
}

/**
 * Applies the files of migrations/ not yet recorded in `d1_migrations`, in name order, each
 * in one batch with its record: what `wrangler d1 migrations apply` does. Returns their names.
 */
export async function applyMigrations(db: D1): Promise<string[]> {
  await db
    .prepare(
      'CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)',
    )
    .all();
  const done = new Set(
    ((await db.prepare('SELECT name FROM d1_migrations').all()).results as { name: string }[]).map(
      (r) => r.name,
    ),
  );
  const dir = join(root, 'migrations');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql') && !done.has(f))
    .sort();
  for (const file of files) {
    const statements = readFileSync(join(dir, file), 'utf8')
      .split(/;\s*$/m)
      .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
      .filter((s) => s !== '');
    await db.batch([
      ...statements.map((s) => db.prepare(s)),
      db.prepare('INSERT INTO d1_migrations (name) VALUES (?)').bind(file),
    ]);
  }
  return files;
}

export interface LocalWorker {
  mf: Miniflare;
  /** Where the Worker listens. */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the Worker on `host:port` (port 0: a free one) with `vars` as its variables and
 * secrets. `persist`: a folder for D1 (`npm run dev`: wrangler's own local state, so
 * `wrangler d1 … --local` sees the same database); without it, in memory.
 */
export async function startWorker(options: {
  vars: Record<string, string>;
  host?: string;
  port?: number;
  persist?: string;
}): Promise<LocalWorker> {
  const mf = new Miniflare({
    modules: true,
    script: await bundleWorker(),
    compatibilityDate: wranglerSetting('compatibility_date'),
    d1Databases: { DB: wranglerSetting('database_id') },
    ...(options.persist ? { d1Persist: options.persist } : {}),
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    bindings: options.vars,
  });
  try {
    const url = await mf.ready;
    await applyMigrations((await mf.getD1Database('DB')) as unknown as D1);
    return { mf, url: url.origin, close: () => mf.dispose() };
  } catch (err) {
    await mf.dispose();
    throw err;
  }
}

/** A free port on `host` (the Worker's URL is a setting: it must be known before it starts). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
