import { afterAll, beforeAll, describe } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import type { TempDatabase } from '../helpers/postgres.js';
import { defineStorageSuite } from './suite.js';

let database: TempDatabase;
const keys = [generateKey()];
beforeAll(async () => {
  database = await createTempMysqlDatabase('sak_storage');
});
afterAll(async () => {
  await database?.drop();
});

describe('storage on MariaDB', () => {
  defineStorageSuite({
    dialect: 'mysql',
    open: (k = keys) =>
      createStorage({ databaseUrl: database.url, encryptionKeys: k, pool: { max: 5 } }),
  });
});
