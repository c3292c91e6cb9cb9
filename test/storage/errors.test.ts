import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { ConfigError, StorageError } from '../../src/errors/index.js';
import { createStorage, parseDatabaseUrl } from '../../src/storage/index.js';
import { expressSessionStore } from '../helpers/express-session-store.js';
import { createTempDatabase } from '../helpers/postgres.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-storage-err-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const keys = [generateKey()];

describe('parseDatabaseUrl', () => {
  it.each([
    ['postgres://u@h:5432/db', { dialect: 'postgres', url: 'postgres://u@h:5432/db' }],
    ['postgresql://u@h/db', { dialect: 'postgres', url: 'postgresql://u@h/db' }],
    [':memory:', { dialect: 'sqlite', filename: ':memory:' }],
    ['file:./data/x.db', { dialect: 'sqlite', filename: resolve('data/x.db') }],
    ['file:///tmp/x.db', { dialect: 'sqlite', filename: '/tmp/x.db' }],
    ['./data/store-app.db', { dialect: 'sqlite', filename: resolve('data/store-app.db') }],
    ['/abs/app.db', { dialect: 'sqlite', filename: '/abs/app.db' }],
    ['mysql://u:p@h:3306/db', { dialect: 'mysql', url: 'mysql://u:p@h:3306/db' }],
    ['MariaDB://u@h/db?ssl=true', { dialect: 'mysql', url: 'mysql://u@h/db?ssl=true' }],
  ])('%s', (url, expected) => {
    expect(parseDatabaseUrl(url)).toEqual(expected);
  });

  it.each([
    '',
    '   ',
    'mongodb://root:hunter2@db/app',
    'file:',
    'http://example.com/db',
    // MySQL URLs missing a part, or not URLs at all:
    'mysql://root:hunter2@db',
    'mysql://root:hunter2@db/',
    'mysql://root:hunter2@db/a/b',
    'mariadb://root:hunter2@:3306/app',
    'mysql://root:hunter2@db:99999/app',
    'mysql//root:hunter2@db/app',
    'mariadb:root:hunter2@db/app',
  ])('refuses %j naming DATABASE_URL and never echoing a password', (url) => {
    let err: unknown;
    try {
      parseDatabaseUrl(url);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).setting).toBe('DATABASE_URL');
    expect((err as Error).message).not.toContain('hunter2');
  });
});

describe('storage failures are typed', () => {
  it('Postgres on a closed port → StorageError at start', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    const err = await createStorage({
      databaseUrl: `postgres://app:s3cretpw@127.0.0.1:${port}/nope`,
      encryptionKeys: keys,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).code).toBe('STORAGE_UNAVAILABLE');
    expect((err as StorageError).status).toBe(503);
    expect((err as Error).message).not.toContain('s3cretpw');
  });

  it('Postgres down after start → reads throw StorageError, never null', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    await new Promise<void>((r) => server.close(() => r()));
    const storage = await createStorage({
      databaseUrl: `postgres://app@127.0.0.1:${port}/nope`,
      encryptionKeys: keys,
      migrate: false,
    });
    try {
      await expect(storage.installations.get('s')).rejects.toMatchObject({
        code: 'STORAGE_UNAVAILABLE',
      });
      await expect(storage.claimOnce('ns', 'x', new Date())).rejects.toMatchObject({
        code: 'STORAGE_UNAVAILABLE',
      });
      await expect(storage.webhooks.runOnce('id', 't', async () => 1)).rejects.toMatchObject({
        code: 'STORAGE_UNAVAILABLE',
      });
    } finally {
      await storage.close();
    }
  });

  it('a Postgres database without the tables (migrate: false) → StorageError naming the fix', async () => {
    const database = await createTempDatabase('sak_nomig');
    const storage = await createStorage({
      databaseUrl: database.url,
      encryptionKeys: keys,
      migrate: false,
    });
    try {
      const err = await storage.installations.get('s').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageError);
      expect((err as Error).message).toContain('store-app migrate');
      // Neither the message nor the cause chain carries query parameters (session data here).
      const store = expressSessionStore(storage.sessions({ pruneIntervalMs: 0 }));
      const failed = await new Promise<unknown>((done) =>
        store.set('sid-1', { cookie: {}, note: 'plain-marker' } as never, (e) => done(e)),
      );
      expect(failed).toBeInstanceOf(StorageError);
      let chain: unknown = failed;
      for (let depth = 0; chain instanceof Error && depth < 5; depth++) {
        expect(chain.message).not.toContain('plain-marker');
        chain = chain.cause;
      }
    } finally {
      await storage.close();
      await database.drop();
    }
  });

  it('a SQLite file under a path that cannot be a folder → ConfigError naming DATABASE_URL', async () => {
    const file = join(dir, 'not-a-folder');
    writeFileSync(file, 'x');
    const err = await createStorage({
      databaseUrl: join(file, 'app.db'),
      encryptionKeys: keys,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).setting).toBe('DATABASE_URL');
  });

  it('a SQLite file that is not a database → ConfigError naming DATABASE_URL', async () => {
    const file = join(dir, 'garbage.db');
    writeFileSync(file, Buffer.alloc(4096, 7));
    const err = await createStorage({ databaseUrl: file, encryptionKeys: keys }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('SQLITE_NOTADB');
  });

  it('a bad encryption key fails at start before touching the database', async () => {
    const file = join(dir, 'never.db');
    await expect(
      createStorage({ databaseUrl: file, encryptionKeys: ['short'] }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      setting: 'STORE_APP_ENCRYPTION_KEYS',
    });
    expect(readdirSync(dir)).not.toContain('never.db');
  });
});

describe('no plaintext secret in the SQLite file', () => {
  it('scans the database and WAL bytes for every token written', async () => {
    const sub = mkdtempSync(join(dir, 'scan-'));
    const storage = await createStorage({ databaseUrl: join(sub, 'app.db'), encryptionKeys: keys });
    const secrets: string[] = [];
    for (let i = 0; i < 5; i++) {
      const access = `at_${generateKey()}`;
      const refresh = `rt_${generateKey()}`;
      secrets.push(access, refresh);
      await storage.installations.upsert(`store-${i}`, {
        scopes: ['read_products'],
        accessToken: access,
        refreshToken: refresh,
        accessTokenExpiresAt: new Date(Date.now() + 60_000),
      });
    }
    // Rows still in the WAL count: scan every file of the database, before and after a checkpoint.
    const scan = () => {
      const files = readdirSync(sub).map((f) => readFileSync(join(sub, f)));
      expect(files.length).toBeGreaterThanOrEqual(1);
      for (const bytes of files) {
        for (const secret of secrets) expect(bytes.includes(Buffer.from(secret))).toBe(false);
      }
      // The scan itself works: a store id we wrote is found.
      expect(files.some((b) => b.includes(Buffer.from('store-3')))).toBe(true);
    };
    scan();
    await storage.close(); // closing checkpoints the WAL into the main file
    scan();
  });
});
