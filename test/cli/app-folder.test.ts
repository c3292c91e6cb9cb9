/**
 * Issue 32 item 6: `npx store-app …` run in a generated app's folder (the built
 * bin, a separate process) reads the settings the way the app does (the
 * environment, then `.env`), says which database it opens and where that came
 * from, never creates an empty SQLite file outside `migrate`, and `purges`
 * says what is scheduled (the sweeps at the purge horizon), not only the
 * purges still pending.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage, openBuiltinAdapter } from '../../src/storage/index.js';
import { run } from '../helpers/run.js';

const root = resolve(import.meta.dirname, '..', '..');
const bin = join(root, 'dist', 'cli', 'index.js');
const work = mkdtempSync(join(tmpdir(), 'sak-cli-app-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The parent's environment without the settings a test must not inherit. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('STORE_') || k === 'DATABASE_URL') delete env[k];
  }
  return { ...env, ...extra };
}

const storeApp = (args: string[], cwd: string, env = cleanEnv()) =>
  run(process.execPath, [bin, ...args], { cwd, env, timeout: 30_000 });

/** An app folder as create-store-app writes it: `.env` naming `./data/app.db` and the key. */
function appFolder(name: string, key = generateKey()): { dir: string; db: string; key: string } {
  const dir = join(work, name);
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(
    join(dir, '.env'),
    `# as create-store-app writes it\nDATABASE_URL=./data/app.db\nSTORE_APP_ENCRYPTION_KEYS=${key}\n`,
  );
  return { dir, db: join(dir, 'data', 'app.db'), key };
}

const tokens = {
  scopes: ['read_products'],
  accessToken: 'at_secret_value',
  refreshToken: null,
  accessTokenExpiresAt: new Date(Date.now() + 3_600_000),
};

describe('store-app in an app folder', () => {
  it('rotate-keys takes DATABASE_URL and STORE_APP_ENCRYPTION_KEYS from .env, and names the database', async () => {
    const app = appFolder('rotate');
    const s = await createStorage({ databaseUrl: app.db, encryptionKeys: [app.key] });
    await s.installations.upsert('store-1', tokens);
    await s.close();

    const r = await storeApp(['rotate-keys'], app.dir);
    expect(r.status, r.out).toBe(0);
    expect(r.stdout).toContain(`Database: ${app.db} (SQLite; DATABASE_URL in .env)`);
    expect(r.stdout).toContain('Installations: 1 scanned');
    expect(r.out).not.toContain(app.key);
  });

  it('the environment wins over .env, as in the app', async () => {
    const app = appFolder('env-wins');
    const other = join(work, 'elsewhere.db');
    const a = await openBuiltinAdapter({ databaseUrl: other });
    await a.migrate();
    await a.close();
    const r = await storeApp(['purges'], app.dir, cleanEnv({ DATABASE_URL: other }));
    expect(r.status, r.out).toBe(0);
    expect(r.stdout).toContain(`Database: ${other} (SQLite; DATABASE_URL in the environment)`);
  });

  it('without .env or DATABASE_URL, purges fails naming the file and the setting, and creates nothing', async () => {
    const dir = join(work, 'no-env');
    mkdirSync(dir);
    const r = await storeApp(['purges'], dir);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toBe(
      `store-app purges: CONFIG_INVALID: DATABASE_URL: no SQLite database at ${join(dir, 'data', 'store-app.db')} ` +
        '(the default: DATABASE_URL is not set in the environment or .env); nothing was created. ' +
        "Run this in the app's folder (its .env names the database), or set DATABASE_URL or --database-url to the app's database.",
    );
    expect(existsSync(join(dir, 'data'))).toBe(false);
    // rotate-keys refuses the same way (its keys given, so the database is what is missing).
    const rotate = await storeApp(
      ['rotate-keys'],
      dir,
      cleanEnv({ STORE_APP_ENCRYPTION_KEYS: generateKey() }),
    );
    expect(rotate.status).toBe(1);
    expect(rotate.stderr).toContain('no SQLite database at');
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('migrate creates the file of .env and says it is new', async () => {
    const app = appFolder('migrate');
    const r = await storeApp(['migrate'], app.dir);
    expect(r.status, r.out).toBe(0);
    expect(r.stdout).toContain(`Database: ${app.db} (SQLite; DATABASE_URL in .env) — a new file`);
    expect(existsSync(app.db)).toBe(true);
  });

  it('purges lists the sweep scheduled at the purge horizon after a purge that is done', async () => {
    const app = appFolder('sweep');
    const a = await openBuiltinAdapter({ databaseUrl: app.db });
    await a.migrate();
    const eventAt = new Date('2026-05-01T10:00:00.000Z');
    const sweepAt = new Date(Date.now() + 600_000);
    await a.purgeOutbox.add({ eventId: 'evt_done', storeId: 'store-gone', eventAt }, new Date());
    await a.purgeOutbox.complete('evt_done', sweepAt);
    await a.purgeOutbox.add(
      { eventId: 'evt_pending', storeId: 'store-pending', eventAt },
      new Date(),
    );
    await a.close();

    const r = await storeApp(['purges'], app.dir);
    expect(r.status, r.out).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[1]).toBe('1 pending purge(s):');
    expect(lines[2]).toMatch(/^store store-pending {2}event evt_pending {2}uninstalled /);
    expect(lines[3]).toMatch(/^1 sweep\(s\) scheduled: the purge is done; a second pass/);
    expect(lines[4]).toBe(
      `store store-gone  event evt_done  uninstalled ${eventAt.toISOString()}  sweep at ${sweepAt.toISOString()}`,
    );
  });
});
