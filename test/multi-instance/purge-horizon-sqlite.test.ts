import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { purgeHorizonSuite } from './purge-horizon.js';

purgeHorizonSuite('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-horizon-'));
  const file = join(dir, 'app.db');
  return {
    url: `file:${file}`,
    async one(query, params = []) {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return Number(Object.values((db.prepare(query).get(...params) ?? {}) as object)[0]);
      } finally {
        db.close();
      }
    },
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
