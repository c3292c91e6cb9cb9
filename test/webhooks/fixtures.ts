/**
 * Shared fixtures of the webhook and purge tests: a real storage (SQLite file
 * in a temp dir, or a throwaway Postgres or MariaDB database), app tables of either
 * dialect, an Express app with the receiver, and Standard Webhooks signing
 * through the scheme's reference library.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import {
  int as myInt,
  mysqlTable,
  text as myText,
  varchar as myVarchar,
} from 'drizzle-orm/mysql-core';
import { pgTable, text as pgText, serial } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express, { type Express } from 'express';
import { Webhook } from 'standardwebhooks';
import { generateKey } from '../../src/crypto/index.js';
import {
  createPurge,
  type PurgeAppOptions,
  resolvePurgeAppOptions,
} from '../../src/purge/index.js';
import { SILENT } from '../../src/shells/express/adapter.js';
import { expressHandler } from '../../src/shells/express/handler.js';
import { createStorage } from '../../src/storage/index.js';
import type { AnyDrizzle, Dialect, Storage } from '../../src/storage/types.js';
import {
  createWebhooks,
  resolveWebhookOptions,
  type WebhookOptions,
} from '../../src/webhooks/index.js';
import type { MinimalLogger } from '../../src/webhooks/types.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase } from '../helpers/postgres.js';

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export const APP_TABLE_NAMES = ['app_notes', 'app_orders_cache', 'app_settings'] as const;

export function sqliteAppTables() {
  return APP_TABLE_NAMES.map((name) =>
    sqliteTable(name, {
      id: integer('id').primaryKey({ autoIncrement: true }),
      storeId: text('store_id').notNull(),
      body: text('body').notNull(),
    }),
  );
}

export function pgAppTables() {
  return APP_TABLE_NAMES.map((name) =>
    pgTable(name, {
      id: serial('id').primaryKey(),
      storeId: pgText('store_id').notNull(),
      body: pgText('body').notNull(),
    }),
  );
}

export function mysqlAppTables() {
  return APP_TABLE_NAMES.map((name) =>
    mysqlTable(name, {
      id: myInt('id').autoincrement().primaryKey(),
      storeId: myVarchar('store_id', { length: 255 }).notNull(),
      body: myText('body').notNull(),
    }),
  );
}

export interface TestDb {
  storage: Storage;
  dialect: Dialect;
  // biome-ignore lint/suspicious/noExplicitAny: tables of the dialect under test.
  tables: any[];
  /** Runs raw SQL on the storage's database. */
  exec(statement: string): Promise<void>;
  /** Rows of `table` for `storeId` (any table with a store_id column). */
  count(table: string, storeId: string): Promise<number>;
  close(): Promise<void>;
}

/** Opens a migrated storage on `dialect` with the three app tables created (indexed by store_id). */
export async function openTestDb(dialect: Dialect): Promise<TestDb> {
  const keys = [generateKey()];
  let storage: Storage;
  let cleanup: () => Promise<void> | void;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'sak-webhooks-'));
    storage = await createStorage({
      databaseUrl: `file:${join(dir, 'app.db')}`,
      encryptionKeys: keys,
    });
    cleanup = () => rmSync(dir, { recursive: true, force: true });
  } else {
    const temp = await (dialect === 'mysql' ? createTempMysqlDatabase : createTempDatabase)(
      'sak_wh',
    );
    storage = await createStorage({ databaseUrl: temp.url, encryptionKeys: keys });
    cleanup = () => temp.drop();
  }
  const db: AnyDrizzle = storage.db;
  const exec = async (statement: string) => {
    if (dialect === 'sqlite') db.run(sql.raw(statement));
    else await db.execute(sql.raw(statement));
  };
  const columns = {
    sqlite: 'id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL',
    postgres: 'id SERIAL PRIMARY KEY, store_id TEXT NOT NULL',
    // An index on TEXT needs a prefix length in MySQL: keys are VARCHAR.
    mysql: 'id INT AUTO_INCREMENT PRIMARY KEY, store_id VARCHAR(255) NOT NULL',
  }[dialect];
  for (const name of APP_TABLE_NAMES) {
    await exec(`CREATE TABLE ${name} (${columns}, body TEXT NOT NULL)`);
    await exec(`CREATE INDEX ${name}_store_id ON ${name} (store_id)`);
  }
  return {
    storage,
    dialect,
    tables: { sqlite: sqliteAppTables, postgres: pgAppTables, mysql: mysqlAppTables }[dialect](),
    exec,
    async count(table, storeId) {
      const query = sql`SELECT COUNT(*) AS n FROM ${sql.identifier(table)} WHERE store_id = ${storeId}`;
      const rows =
        dialect === 'sqlite'
          ? db.all(query)
          : dialect === 'mysql'
            ? ((await db.execute(query)) as unknown[][])[0]!
            : ((await db.execute(query)) as { rows: unknown[] }).rows;
      return Number((rows[0] as { n: number | string }).n);
    },
    async close() {
      await storage.close();
      await cleanup();
    },
  };
}

/** Inserts `perTable` rows for the store into each app table. */
export async function seedAppRows(t: TestDb, storeId: string, perTable = 3): Promise<void> {
  for (const table of t.tables) {
    await t.storage.db
      .insert(table)
      .values(Array.from({ length: perTable }, (_, i) => ({ storeId, body: `row ${i}` })));
  }
}

/** Installs a store in the kit's table with throwaway tokens. */
export async function seedInstallation(storage: Storage, storeId: string) {
  return storage.installations.upsert(storeId, {
    scopes: ['read_products'],
    accessToken: `at_${randomUUID()}`,
    refreshToken: `rt_${randomUUID()}`,
    accessTokenExpiresAt: new Date(Date.now() + 86_400_000),
  });
}

export interface ReceiverApp {
  app: Express;
  webhooks: ReturnType<typeof createWebhooks>['api'];
  purge: ReturnType<typeof createPurge>;
  logs: { level: string; obj: object; msg: string | undefined }[];
}

/** An Express app with the receiver mounted at the configured path, as kit.middleware() does. */
export function receiverApp(
  storage: Storage,
  input: {
    secrets: string[];
    options?: Omit<WebhookOptions, 'secrets'>;
    purgeOptions?: PurgeAppOptions;
    /** Middleware mounted before the receiver (body parsers). */
    before?: (app: Express) => void;
    nowSeconds?: () => number;
    /** The platform-clock re-read (the kit's `resyncClock`). */
    resyncClock?: () => Promise<boolean>;
  },
): ReceiverApp {
  const logs: ReceiverApp['logs'] = [];
  const logger: MinimalLogger = {
    info: (obj, msg) => logs.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => logs.push({ level: 'error', obj, msg }),
  };
  const options = resolveWebhookOptions({ ...input.options, secrets: input.secrets }, {});
  const purge = createPurge({
    storage,
    options: resolvePurgeAppOptions(input.purgeOptions ?? {}, storage.dialect),
    logger,
  });
  const hooks = createWebhooks({
    storage,
    options,
    purge,
    logger,
    ...(input.nowSeconds ? { nowSeconds: input.nowSeconds } : {}),
    ...(input.resyncClock ? { resyncClock: input.resyncClock } : {}),
  });
  const app = express();
  input.before?.(app);
  // The receiver pipeline through the Express shell's adapter, as kit.middleware() runs it.
  app.all(hooks.path, expressHandler(hooks.handler, SILENT));
  return { app, webhooks: hooks.api, purge, logs };
}

/** Signs a delivery with the `standardwebhooks` reference library. */
export function signDelivery(
  secret: string,
  payload: unknown,
  input: { id?: string; at?: Date } = {},
): { id: string; body: string; headers: Record<string, string> } {
  const id = input.id ?? `msg_${randomUUID()}`;
  const at = input.at ?? new Date();
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const signature = new Webhook(secret).sign(id, at, body);
  return {
    id,
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

export function uninstallPayload(storeId: string, at = new Date()) {
  return {
    type: 'app.uninstalled',
    timestamp: at.toISOString(),
    data: {
      store_id: storeId,
      app_id: randomUUID(),
      client_id: 'app_test',
      uninstalled_at: at.toISOString(),
    },
  };
}
