// The storage conformance suite on the built-in SQLite storage, run by vitest
// inside Bun or Deno themselves (test/shells/bun-deno-journey.test.ts starts
// `<runtime> node_modules/vitest/vitest.mjs run --root test/shells/runtimes`),
// on the built package (dist/): the driver there is the runtime's own
// (bun:sqlite, node:sqlite), never better-sqlite3. Not matched by the
// repository's own vitest run (which takes test/**/*.test.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { openBuiltinAdapter } from '../../../dist/storage/index.js';
import { defineStorageAdapterSuite } from '../../../dist/testing/adapter-suite.js';

const runtime = 'Bun' in globalThis ? 'bun' : 'Deno' in globalThis ? 'deno' : 'node';
const url = `file:${join(mkdtempSync(join(tmpdir(), `sak-${runtime}-suite-`)), 'suite.db')}`;
const open = () => openBuiltinAdapter({ databaseUrl: url });

describe(`SQLite on ${runtime}`, () => {
  it('runs inside Bun or Deno, never Node', () => {
    expect(runtime).toBe(process.env.STORE_APP_EXPECT_RUNTIME);
  });

  it("keeps better-sqlite3's pragmas: WAL, synchronous FULL, secure_delete, foreign keys", async () => {
    const adapter = await open();
    try {
      const pragma = (name) => Object.values(adapter.db.all(sql.raw(`PRAGMA ${name}`))[0])[0];
      expect(pragma('journal_mode')).toBe('wal');
      expect(pragma('synchronous')).toBe(2);
      expect(pragma('secure_delete')).toBe(1);
      expect(pragma('foreign_keys')).toBe(1);
      expect(pragma('busy_timeout')).toBe(2000);
    } finally {
      await adapter.close();
    }
  });

  it("kit.db.transaction() (Drizzle's, on the runtime's driver) commits, and rolls back on a throw", async () => {
    const adapter = await open();
    try {
      adapter.db.run(sql.raw('CREATE TABLE IF NOT EXISTS app_tx (k text NOT NULL)'));
      adapter.db.transaction((tx) => {
        tx.run(sql`INSERT INTO app_tx (k) VALUES ('kept')`);
      });
      expect(() =>
        adapter.db.transaction((tx) => {
          tx.run(sql`INSERT INTO app_tx (k) VALUES ('undone')`);
          // A nested transaction is a savepoint: its rollback keeps the outer write.
          expect(() =>
            tx.transaction((inner) => {
              inner.run(sql`INSERT INTO app_tx (k) VALUES ('inner')`);
              throw new Error('inner');
            }),
          ).toThrow('inner');
          throw new Error('outer');
        }),
      ).toThrow('outer');
      const rows = adapter.db.all(sql`SELECT k FROM app_tx ORDER BY k`);
      expect(rows.map((r) => r.k)).toEqual(['kept']);
    } finally {
      await adapter.close();
    }
  });
});

let probeMade = false;
defineStorageAdapterSuite({
  name: `built-in SQLite on ${runtime}`,
  open: async () => {
    const adapter = await open();
    if (!probeMade)
      adapter.db.run(sql.raw('CREATE TABLE IF NOT EXISTS app_probe (probe_key text NOT NULL)'));
    probeMade = true;
    return adapter;
  },
  txProbe: {
    async write(tx, key) {
      tx.run(sql`INSERT INTO app_probe (probe_key) VALUES (${key})`);
    },
    async count(key) {
      const adapter = await open();
      try {
        const rows = adapter.db.all(
          sql`SELECT count(*) AS n FROM app_probe WHERE probe_key = ${key}`,
        );
        return Number(rows[0].n);
      } finally {
        await adapter.close();
      }
    },
  },
});
