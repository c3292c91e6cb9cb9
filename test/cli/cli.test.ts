import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { decodeProtectedHeader } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { generateKey, parseEncryptionKeys } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { SERVERS } from '../helpers/databases.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    stdout: (l) => out.push(l),
    stderr: (l) => err.push(l),
    env,
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('store-app CLI', () => {
  it('the bin entry sets the process exit code and prints no stack', () => {
    const bin = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(resolve('node_modules/.bin/tsx'), [resolve('src/cli/index.ts'), ...args], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
      });
    expect(bin(['nope']).status).toBe(2);
    const failed = bin(['rotate-keys'], {
      STORE_APP_ENCRYPTION_KEYS: 'short',
      DATABASE_URL: ':memory:',
    });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('npx store-app keygen');
    expect(failed.stderr).not.toMatch(/\n\s+at /);
  });

  it('keygen prints one valid key', async () => {
    const { code, stdout } = await cli(['keygen']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(parseEncryptionKeys(stdout)[0]?.bytes).toHaveLength(32);
  });

  it('--help prints usage with exit 0; usage mistakes exit 2', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('rotate-keys');
    expect((await cli([])).code).toBe(2);
    expect((await cli(['frobnicate'])).code).toBe(2);
    expect((await cli(['keygen', '--bogus'])).code).toBe(2);
    expect((await cli(['keygen', 'extra'])).code).toBe(2);
  });

  it('migrate creates the tables at --database-url (and the env value)', async () => {
    const file = join(dir, 'm', 'app.db');
    const result = await cli(['migrate', '--database-url', `file:${file}`]);
    expect(result.code).toBe(0);
    const db = new Database(file);
    const tables = db
      .prepare("select name from sqlite_master where type = 'table' and name like 'store_app_%'")
      .all()
      .map((r) => (r as { name: string }).name)
      .sort();
    db.close();
    expect(tables).toEqual([
      'store_app_claims',
      'store_app_installations',
      'store_app_pending_purges',
      'store_app_purge_audit',
      'store_app_sessions',
      'store_app_webhook_deliveries',
    ]);
    expect((await cli(['migrate'], { DATABASE_URL: file })).code).toBe(0);
  });

  for (const server of SERVERS) {
    it(`migrate creates the tables on ${server.label}; a second run succeeds too`, async () => {
      const db = await server.create('sak_cli');
      try {
        const url = server.dialect === 'mysql' ? db.url.replace(/^mysql:/, 'mariadb:') : db.url;
        const first = await cli(['migrate', '--database-url', url]);
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout).toContain(`(${server.dialect})`);
        expect((await cli(['migrate'], { DATABASE_URL: url })).code).toBe(0);
        const tables = await db.rows<{ name: string }>(
          server.dialect === 'mysql'
            ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'store_app_%'"
            : "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'store_app_%'",
        );
        expect(tables.map((t) => t.name)).toContain('store_app_installations');
        expect(tables.map((t) => t.name)).toContain('store_app_pending_purges');
      } finally {
        await db.drop();
      }
    });
  }

  it('failures exit 1 with the message and no stack', async () => {
    const r = await cli(['migrate'], { DATABASE_URL: 'mongodb://x@y/z' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('DATABASE_URL');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const noKeys = await cli(['rotate-keys', '--database-url', join(dir, 'k.db')], {});
    expect(noKeys.code).toBe(1);
    expect(noKeys.stderr).toContain('STORE_APP_ENCRYPTION_KEYS');
  });

  it('rotate-keys re-encrypts every row to the newest key; a second run changes nothing', async () => {
    const file = join(dir, 'rotate', 'app.db');
    const oldKey = generateKey();
    const newKey = generateKey();
    const before = await createStorage({ databaseUrl: file, encryptionKeys: [oldKey] });
    const written = new Map<string, string>();
    for (let i = 0; i < 4; i++) {
      const token = `at_${i}_${generateKey()}`;
      written.set(`store-${i}`, token);
      await before.installations.upsert(`store-${i}`, {
        scopes: ['read_products'],
        accessToken: token,
        refreshToken: i === 0 ? null : `rt_${i}`,
        accessTokenExpiresAt: new Date(Date.now() + 60_000),
      });
    }
    await before.close();

    const env = { STORE_APP_ENCRYPTION_KEYS: `${newKey},${oldKey}` };
    const first = await cli(['rotate-keys', '--database-url', file], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('4 scanned, 4 re-encrypted');

    const newKid = parseEncryptionKeys(newKey)[0]!.kid;
    const db = new Database(file, { readonly: true });
    const rows = db
      .prepare('select key_id, access_token_enc, refresh_token_enc from store_app_installations')
      .all() as { key_id: string; access_token_enc: string; refresh_token_enc: string | null }[];
    db.close();
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(row.key_id).toBe(newKid);
      expect(decodeProtectedHeader(row.access_token_enc).kid).toBe(newKid);
      if (row.refresh_token_enc)
        expect(decodeProtectedHeader(row.refresh_token_enc).kid).toBe(newKid);
    }

    const second = await cli(['rotate-keys', '--database-url', file], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('4 scanned, 0 re-encrypted');

    // The old key can now be dropped.
    const after = await createStorage({ databaseUrl: file, encryptionKeys: [newKey] });
    try {
      for (const [storeId, token] of written) {
        expect((await after.installations.get(storeId))?.accessToken).toBe(token);
      }
    } finally {
      await after.close();
    }
  });

  it('rotate-keys skips a row written with a removed key, lists its store, still rotates the rest, exits 1', async () => {
    const file = join(dir, 'mixed', 'app.db');
    const oldKey = generateKey();
    const lostKey = generateKey();
    const newKey = generateKey();
    const upsert = (s: Awaited<ReturnType<typeof createStorage>>, id: string, token: string) =>
      s.installations.upsert(id, {
        scopes: ['read_products'],
        accessToken: token,
        refreshToken: `rt_${token}`,
        accessTokenExpiresAt: new Date(Date.now() + 60_000),
      });
    const old = await createStorage({ databaseUrl: file, encryptionKeys: [oldKey] });
    await upsert(old, 'good-a', 'at_good_a');
    await old.close();
    const lost = await createStorage({ databaseUrl: file, encryptionKeys: [lostKey] });
    await upsert(lost, 'orphan', 'at_orphan_secret');
    await lost.close();
    const current = await createStorage({ databaseUrl: file, encryptionKeys: [newKey] });
    await upsert(current, 'good-z', 'at_good_z');
    await current.close();
    const orphanCipher = (() => {
      const db = new Database(file, { readonly: true });
      const row = db
        .prepare("select access_token_enc from store_app_installations where store_id = 'orphan'")
        .get() as { access_token_enc: string };
      db.close();
      return row.access_token_enc;
    })();

    const env = { STORE_APP_ENCRYPTION_KEYS: `${newKey},${oldKey}` };
    const first = await cli(['rotate-keys', '--database-url', file], env);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain(
      'Installations: 3 scanned, 1 re-encrypted, 1 already current, 1 failed.',
    );
    expect(first.stderr).toContain('store orphan not re-encrypted (UNKNOWN_KEY_ID');
    expect(first.stderr).not.toContain('good-a');
    // No ciphertext and no key material in the output.
    for (const secret of [orphanCipher, lostKey, newKey, oldKey, 'at_orphan_secret']) {
      expect(first.stdout + first.stderr).not.toContain(secret);
    }
    // The good row after the bad one (in id order) was still done.
    const after = await createStorage({ databaseUrl: file, encryptionKeys: [newKey] });
    try {
      expect((await after.installations.get('good-a'))?.accessToken).toBe('at_good_a');
      expect((await after.installations.get('good-z'))?.accessToken).toBe('at_good_z');
    } finally {
      await after.close();
    }
    // Idempotent: a rerun changes nothing more and still reports the orphan.
    const second = await cli(['rotate-keys', '--database-url', file], env);
    expect(second.code).toBe(1);
    expect(second.stdout).toContain('3 scanned, 0 re-encrypted, 2 already current, 1 failed.');
    // With the lost key back, the run completes and exits 0.
    const fixed = await cli(['rotate-keys', '--database-url', file], {
      STORE_APP_ENCRYPTION_KEYS: `${newKey},${lostKey}`,
    });
    expect(fixed.code).toBe(0);
    expect(fixed.stdout).toContain('3 scanned, 1 re-encrypted, 2 already current, 0 failed.');
  });

  it('rotate-keys without the old key fails with exit 1 naming the setting, changing nothing', async () => {
    const file = join(dir, 'lost', 'app.db');
    const s = await createStorage({ databaseUrl: file, encryptionKeys: [generateKey()] });
    await s.installations.upsert('store-x', {
      scopes: [],
      accessToken: 'at_x',
      refreshToken: null,
      accessTokenExpiresAt: new Date(Date.now() + 60_000),
    });
    await s.close();
    const r = await cli(['rotate-keys', '--database-url', file], {
      STORE_APP_ENCRYPTION_KEYS: generateKey(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('STORE_APP_ENCRYPTION_KEYS');
  });
});
