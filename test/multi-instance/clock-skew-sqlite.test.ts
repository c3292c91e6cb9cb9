import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { clockSkewSuite } from './clock-skew.js';

// One SQLite file, three processes: one host, whose clock SQLite reads; the
// processes' own clocks (their `Date`) are the skewed ones.
clockSkewSuite('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-clock-skew-'));
  const file = join(dir, 'app.db');
  let db: Database.Database | undefined;
  // Opened lazily: the first app process creates the file and its tables.
  const handle = () => {
    db ??= new Database(file, { readonly: true, fileMustExist: true });
    return db;
  };
  return {
    url: file,
    async expiry(storeId) {
      const row = handle()
        .prepare('SELECT access_expires_at AS at FROM store_app_installations WHERE store_id = ?')
        .get(storeId) as { at: number } | undefined;
      return row?.at;
    },
    async outbox(storeId) {
      const rows = handle()
        .prepare('SELECT kind FROM store_app_pending_purges WHERE store_id = ?')
        .all(storeId) as Array<{ kind: string }>;
      return rows.map((r) => r.kind);
    },
    async close() {
      db?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
