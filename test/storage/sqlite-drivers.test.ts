/**
 * Which SQLite driver the kit loads per runtime (src/storage/sqlite-drivers.ts).
 * The drivers themselves run inside Bun and Deno in
 * test/shells/bun-deno-journey.test.ts; here, on Node, what a runtime without
 * one says.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors/index.js';
import { loadRuntimeSqliteDriver } from '../../src/storage/sqlite-drivers.js';

describe('SQLite driver per runtime', () => {
  afterEach(() => {
    delete (globalThis as { Deno?: unknown }).Deno;
  });

  it('on Node, better-sqlite3', async () => {
    let loaded = false;
    await loadRuntimeSqliteDriver(async () => {
      loaded = true;
      return { name: 'better-sqlite3' } as never;
    });
    expect(loaded).toBe(true);
  });

  it('a Deno without node:sqlite fails at start naming DATABASE_URL, the version to get and Postgres', async () => {
    // Node 20 has no node:sqlite either: it stands in for a Deno older than 2.2.
    (globalThis as { Deno?: unknown }).Deno = {};
    const failure = await loadRuntimeSqliteDriver(async () => {
      throw new Error('better-sqlite3 must not be tried on Deno');
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toMatch(
      /^DATABASE_URL: selects SQLite, and this Deno has no node:sqlite \(Deno 2\.2 or later/,
    );
    expect((failure as Error).message).toContain('postgres://');
  });
});
