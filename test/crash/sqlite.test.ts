import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { crashSuite } from './suite.js';

crashSuite('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-crash-'));
  const file = join(dir, 'app.db');
  let db: Database.Database | undefined;
  // Opened lazily: the first app process creates the file and its tables.
  const handle = () => {
    db ??= new Database(file, { readonly: true, fileMustExist: true });
    return db;
  };
  return {
    url: file,
    reader: {
      async count(table, storeId) {
        const row = handle()
          .prepare(`SELECT count(*) AS n FROM ${table} WHERE store_id = ?`)
          .get(storeId) as {
          n: number;
        };
        return row.n;
      },
      async effects(webhookId) {
        const row = handle()
          .prepare('SELECT count(*) AS n FROM webhook_effects WHERE webhook_id = ?')
          .get(webhookId) as { n: number };
        return row.n;
      },
      async version(storeId) {
        const row = handle()
          .prepare('SELECT version FROM store_app_installations WHERE store_id = ?')
          .get(storeId) as { version: number } | undefined;
        return row?.version ?? 0;
      },
      async close() {
        db?.close();
      },
    },
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
