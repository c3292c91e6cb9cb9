/** The purge options are checked when the kit's configuration is resolved, before any database opens. */
import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import { ConfigErrors, resolveConfig } from '../../src/config/index.js';
import { CONFIG_INVALID, type ConfigError } from '../../src/errors/index.js';
import { validEnv } from '../helpers/config.js';
import { newSecret } from '../webhooks/fixtures.js';

const ENV = { ...validEnv(), STORE_APP_WEBHOOK_SECRET: newSecret(), DATABASE_URL: './data/x.db' };

function settingsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect((err as ConfigError).code).toBe(CONFIG_INVALID);
    return err instanceof ConfigErrors
      ? err.problems.map((p) => p.setting)
      : [(err as ConfigError).setting];
  }
  return [];
}

describe('storeApp() purge options', () => {
  const notes = sqliteTable('notes', { id: text('id'), storeId: text('store_id') });

  it('accepts store-scoped tables of the database dialect', () => {
    const c = resolveConfig({ storeScopedTables: [notes], onPurge: () => {} }, ENV);
    expect(c.purge.storeScopedTables).toEqual([notes]);
    expect(typeof c.purge.onPurge).toBe('function');
  });

  it('refuses at start a table without store_id, of the other dialect, or a bad onPurge', () => {
    const noStore = sqliteTable('logs', { id: text('id'), shop: text('shop_id') });
    expect(settingsOf(() => resolveConfig({ storeScopedTables: [noStore] }, ENV))).toContain(
      'storeScopedTables',
    );
    const pgNotes = pgTable('notes', { storeId: pgText('store_id') });
    expect(settingsOf(() => resolveConfig({ storeScopedTables: [pgNotes] }, ENV))).toContain(
      'storeScopedTables',
    );
    expect(settingsOf(() => resolveConfig({ onPurge: 42 as never }, ENV))).toContain('onPurge');
  });

  it('refuses a missing webhook secret at start', () => {
    const { STORE_APP_WEBHOOK_SECRET: _, ...env } = ENV;
    expect(settingsOf(() => resolveConfig({}, env))).toContain('STORE_APP_WEBHOOK_SECRET');
  });
});
