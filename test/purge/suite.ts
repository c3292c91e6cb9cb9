/**
 * One purge suite, run on a SQLite file, the real Postgres and MariaDB: the purge
 * through `kit.purge` and through the `app.uninstalled` receiver, with
 * failures injected by a database trigger.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { mysqlTable, text as myText } from 'drizzle-orm/mysql-core';
import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_INVALID, type StoreAppError } from '../../src/errors/index.js';
import { resolvePurgeAppOptions } from '../../src/purge/index.js';
import type { AnyDrizzle, Dialect } from '../../src/storage/types.js';
import { expressSessionStore } from '../helpers/express-session-store.js';
import {
  APP_TABLE_NAMES,
  newSecret,
  openTestDb,
  receiverApp,
  seedAppRows,
  seedInstallation,
  signDelivery,
  type TestDb,
  uninstallPayload,
} from '../webhooks/fixtures.js';

const KIT_TABLES = ['store_app_installations', 'store_app_sessions'];

export function definePurgeSuite(dialect: Dialect): void {
  const tableOf = (name: string, column: string) =>
    ({
      sqlite: () => sqliteTable(name, { [column]: text(column) }),
      postgres: () => pgTable(name, { [column]: pgText(column) }),
      mysql: () => mysqlTable(name, { [column]: myText(column) }),
    })[dialect]();
  let t: TestDb;
  const secret = newSecret();

  beforeAll(async () => {
    t = await openTestDb(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A store with an installation, a session and 3 rows per app table. */
  async function seedStore(storeId: string): Promise<void> {
    await seedInstallation(t.storage, storeId);
    await seedAppRows(t, storeId);
    const store = expressSessionStore(t.storage.sessions());
    await new Promise<void>((resolve, reject) =>
      store.set(
        `sid-${randomUUID()}`,
        {
          cookie: { originalMaxAge: 60_000, expires: new Date(Date.now() + 60_000) },
          storeId,
        } as never,
        (err) => (err ? reject(err) : resolve()),
      ),
    );
  }

  async function rowsOf(storeId: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const name of [...KIT_TABLES, ...APP_TABLE_NAMES])
      out[name] = await t.count(name, storeId);
    return out;
  }

  const full = {
    store_app_installations: 1,
    store_app_sessions: 1,
    app_notes: 3,
    app_orders_cache: 3,
    app_settings: 3,
  };
  const empty = Object.fromEntries(Object.keys(full).map((k) => [k, 0]));

  async function injectFailure(): Promise<void> {
    if (dialect === 'sqlite') {
      await t.exec(
        "CREATE TRIGGER fail_purge BEFORE DELETE ON app_settings BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
      );
    } else if (dialect === 'mysql') {
      await t.exec(
        "CREATE TRIGGER fail_purge BEFORE DELETE ON app_settings FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure'",
      );
    } else {
      await t.exec(
        "CREATE OR REPLACE FUNCTION fail_purge() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql",
      );
      await t.exec(
        'CREATE TRIGGER fail_purge BEFORE DELETE ON app_settings FOR EACH ROW EXECUTE FUNCTION fail_purge()',
      );
    }
  }
  const removeFailure = () =>
    t.exec(
      dialect === 'postgres'
        ? 'DROP TRIGGER fail_purge ON app_settings'
        : 'DROP TRIGGER fail_purge',
    );

  describe('kit.purge', () => {
    it('deletes every kit and app row of the store, leaves other stores, and is idempotent', async () => {
      const { purge } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      const gone = `s-${randomUUID()}`;
      const kept = `s-${randomUUID()}`;
      await seedStore(gone);
      await seedStore(kept);
      expect(await rowsOf(gone)).toEqual(full);

      const result = await purge(gone);
      expect(result.purged).toBe(true);
      expect(result.counts).toMatchObject(full);
      expect(await rowsOf(gone)).toEqual(empty);
      expect(await rowsOf(kept)).toEqual(full);

      const again = await purge(gone);
      expect(again.purged).toBe(true);
      expect(Object.values(again.counts).every((n) => n === 0)).toBe(true);
      expect(await rowsOf(kept)).toEqual(full);
    });

    it('keeps an audit row with counts and no merchant data', async () => {
      const { purge } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      const storeId = `s-${randomUUID()}`;
      await seedStore(storeId);
      await purge(storeId);
      const db: AnyDrizzle = t.storage.db;
      const q = sql`SELECT counts FROM store_app_purge_audit WHERE store_id = ${storeId}`;
      const rows =
        dialect === 'sqlite'
          ? db.all(q)
          : dialect === 'mysql'
            ? (await db.execute(q))[0]
            : (await db.execute(q)).rows;
      expect(rows).toHaveLength(1);
      const counts = rows[0].counts;
      const text = typeof counts === 'string' ? counts : JSON.stringify(counts);
      expect(JSON.parse(text)).toMatchObject(full);
      expect(text).not.toContain('row 0');
    });

    it('runs onPurge inside the transaction: a throw rolls everything back', async () => {
      let fail = true;
      const { purge } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: {
          storeScopedTables: t.tables,
          onPurge: () => {
            if (fail) throw new Error('object store down');
          },
        },
      });
      const storeId = `s-${randomUUID()}`;
      await seedStore(storeId);
      await expect(purge(storeId)).rejects.toThrow();
      expect(await rowsOf(storeId)).toEqual(full);
      fail = false;
      await purge(storeId);
      expect(await rowsOf(storeId)).toEqual(empty);
    });

    it('refuses at creation a table without store_id, of the other dialect, or a kit table', () => {
      const code = (fn: () => unknown) => {
        try {
          fn();
        } catch (err) {
          return (err as StoreAppError).code;
        }
        return 'no error';
      };
      const noStore = tableOf('no_store', 'id');
      const other =
        dialect === 'sqlite'
          ? pgTable('x', { storeId: pgText('store_id') })
          : sqliteTable('x', { storeId: text('store_id') });
      const kit = tableOf('store_app_installations', 'store_id');
      for (const tables of [[noStore], [other], [kit], [t.tables[0], t.tables[0]], [{}]]) {
        expect(code(() => resolvePurgeAppOptions({ storeScopedTables: tables }, dialect))).toBe(
          CONFIG_INVALID,
        );
      }
      expect(code(() => resolvePurgeAppOptions({ onPurge: 'x' as never }, dialect))).toBe(
        CONFIG_INVALID,
      );
      expect(code(() => resolvePurgeAppOptions({ storeScopedTables: t.tables }, dialect))).toBe(
        'no error',
      );
    });
  });

  describe('app.uninstalled', () => {
    it('rolls back when the database fails mid-purge (500), and the retry completes the purge', async () => {
      const { app, webhooks } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      let handlerRuns = 0;
      webhooks.on('app.uninstalled', () => {
        handlerRuns++;
      });
      const storeId = `s-${randomUUID()}`;
      const kept = `s-${randomUUID()}`;
      await seedStore(storeId);
      await seedStore(kept);
      const d = signDelivery(secret, uninstallPayload(storeId, new Date(Date.now() + 1000)));
      await injectFailure();
      try {
        const first = await request(app).post('/webhooks').set(d.headers).send(d.body);
        expect(first.status).toBe(500);
        expect(first.body.code).toBe('WEBHOOK_HANDLER_FAILED');
        // app_notes and app_orders_cache were deleted before app_settings failed: all restored.
        expect(await rowsOf(storeId)).toEqual(full);
      } finally {
        await removeFailure();
      }
      const retry = await request(app).post('/webhooks').set(d.headers).send(d.body);
      expect(retry.status).toBe(200);
      expect(await rowsOf(storeId)).toEqual(empty);
      expect(await rowsOf(kept)).toEqual(full);
      // The app's handler committed with the first attempt and is not run again.
      expect(handlerRuns).toBe(1);
    });

    it('a retried uninstall completes the purge even when the stored tokens no longer decrypt', async () => {
      const { app } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      const storeId = `s-${randomUUID()}`;
      await seedStore(storeId);
      const d = signDelivery(secret, uninstallPayload(storeId, new Date(Date.now() + 1000)));
      await injectFailure();
      try {
        expect((await request(app).post('/webhooks').set(d.headers).send(d.body)).status).toBe(500);
      } finally {
        await removeFailure();
      }
      // The encryption key was lost meanwhile: the tokens are unreadable, the data must still go.
      await t.exec(
        `UPDATE store_app_installations SET access_token_enc = 'not-a-jwe' WHERE store_id = '${storeId}'`,
      );
      const retry = await request(app).post('/webhooks').set(d.headers).send(d.body);
      expect(retry.status).toBe(200);
      expect(await rowsOf(storeId)).toEqual(empty);
    });

    it('does not delete a reinstall when the uninstall event arrives late', async () => {
      const { app } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      const storeId = `s-${randomUUID()}`;
      await seedStore(storeId);
      // Uninstalled 2 s ago; the merchant has reinstalled since; the event was delayed.
      const uninstalledAt = new Date(Date.now() - 2000);
      const reinstall = await seedInstallation(t.storage, storeId);
      expect(reinstall.installedAt.getTime()).toBeGreaterThan(uninstalledAt.getTime());
      const d = signDelivery(secret, uninstallPayload(storeId, uninstalledAt));
      const ok = await request(app).post('/webhooks').set(d.headers).send(d.body);
      expect(ok.status).toBe(200);
      expect(await rowsOf(storeId)).toEqual(full);
      expect(await t.storage.installations.get(storeId)).not.toBeNull();
    });

    it.each([
      ['an installation', true],
      ['no installation left (already purged)', false],
    ])(
      'a reinstall committing while a late uninstall purge runs survives it (%s)',
      async (_what, installed) => {
        const storeId = `s-${randomUUID()}`;
        await seedStore(storeId);
        if (!installed) {
          await t.exec(`DELETE FROM store_app_installations WHERE store_id = '${storeId}'`);
        }
        const before = new Date();
        let reachedHook!: () => void;
        const inHook = new Promise<void>((r) => {
          reachedHook = r;
        });
        let release!: () => void;
        const gate = new Promise<void>((r) => {
          release = r;
        });
        // The purge passes its "installed before the event" check, then stalls in onPurge.
        const purging = t.storage.purge(storeId, {
          tables: t.tables,
          ifInstalledBefore: before,
          onPurge: async () => {
            reachedHook();
            await gate;
          },
        });
        await inHook;
        await new Promise((r) => setTimeout(r, 5));
        // The merchant reinstalls now: the old event must not delete the new installation.
        const reinstalling = seedInstallation(t.storage, storeId);
        await new Promise((r) => setTimeout(r, 50));
        release();
        expect((await purging).purged).toBe(true);
        const reinstall = await reinstalling;
        const kept = await t.storage.installations.get(storeId);
        expect(kept?.accessToken).toBe(reinstall.accessToken);
      },
    );

    it('runs the purge once for 100 parallel deliveries of one uninstall', async () => {
      const { app, logs } = receiverApp(t.storage, {
        secrets: [secret],
        purgeOptions: { storeScopedTables: t.tables },
      });
      const storeId = `s-${randomUUID()}`;
      await seedStore(storeId);
      const d = signDelivery(secret, uninstallPayload(storeId, new Date(Date.now() + 1000)));
      const results = await Promise.all(
        Array.from({ length: 100 }, () =>
          request(app).post('/webhooks').set(d.headers).send(d.body),
        ),
      );
      // Every delivery acknowledged (200, or 202 at the acknowledgement deadline) or, when the
      // machine is too loaded to reach the database in time, told to retry (503 with
      // Retry-After): never an error. On failure, the answers that were neither.
      const wrong = results
        .filter(
          (r) =>
            r.status !== 200 && r.status !== 202 && !(r.status === 503 && r.headers['retry-after']),
        )
        .map((r) => `${r.status} ${(r.body as { code?: string }).code ?? r.text.slice(0, 80)}`);
      expect(wrong).toEqual([]);
      expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
      expect(await rowsOf(storeId)).toEqual(empty);
      const purges = logs.filter(
        (l) => l.msg === 'store data purged' && (l.obj as { storeId?: string }).storeId === storeId,
      );
      expect(purges.length).toBeGreaterThanOrEqual(1);
      // Nearly all duplicates see the purge done (or join the running one).
      expect(purges.length).toBeLessThan(5);
    });
  });
}
