import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { defineStorageSuite } from './suite.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-storage-'));
const keys = [generateKey()];
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('storage on a SQLite file', () => {
  defineStorageSuite({
    dialect: 'sqlite',
    open: (k = keys) =>
      createStorage({ databaseUrl: `file:${join(dir, 'nested', 'app.db')}`, encryptionKeys: k }),
  });
});
