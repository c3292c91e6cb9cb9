import { afterAll, beforeAll, describe } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage } from '../../src/storage/index.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { defineStorageSuite } from './suite.js';

let database: TempDatabase;
const keys = [generateKey()];
beforeAll(async () => {
  database = await createTempDatabase('sak_storage');
});
afterAll(async () => {
  await database?.drop();
});

describe('storage on Postgres', () => {
  defineStorageSuite({
    dialect: 'postgres',
    open: (k = keys) =>
      createStorage({ databaseUrl: database.url, encryptionKeys: k, pool: { max: 5 } }),
  });
});
