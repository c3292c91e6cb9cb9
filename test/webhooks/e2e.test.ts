/**
 * End to end over real sockets: the local platform, an app with the kit, two
 * stores installed through the real install flow, app rows in three tables,
 * then the merchant uninstalls one store from the platform. The platform's
 * signed `app.uninstalled` delivery must arrive at the receiver and leave
 * zero rows for that store in every table, and every row of the other.
 * On a SQLite file and on the real Postgres.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyDrizzle } from '../../src/storage/types.js';
import type { AppUninstalledPayload, WebhookEvent } from '../../src/webhooks/types.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';
import { APP_TABLE_NAMES, pgAppTables, sqliteAppTables } from './fixtures.js';

const KIT_TABLES = ['store_app_installations', 'store_app_sessions'];
const dir = mkdtempSync(join(tmpdir(), 'sak-webhooks-e2e-'));
let pg: TempDatabase;

beforeAll(async () => {
  pg = await createTempDatabase('sak_wh_e2e');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['sqlite' as const, () => join(dir, 'e2e.db')],
  ['postgres' as const, () => pg.url],
])('uninstall from the platform on %s', (dialect, databaseUrl) => {
  let h: Harness;
  const tables = dialect === 'sqlite' ? sqliteAppTables() : pgAppTables();
  let db: AnyDrizzle;

  async function exec(statement: string) {
    if (dialect === 'sqlite') db.run(sql.raw(statement));
    else await db.execute(sql.raw(statement));
  }
  async function count(table: string, storeId: string): Promise<number> {
    const q = sql`SELECT COUNT(*) AS n FROM ${sql.identifier(table)} WHERE store_id = ${storeId}`;
    const rows = dialect === 'sqlite' ? db.all(q) : (await db.execute(q)).rows;
    return Number(rows[0].n);
  }

  beforeAll(async () => {
    h = await startHarness({ databaseUrl: databaseUrl(), kit: { storeScopedTables: tables } });
    db = h.kit.db;
    const id = dialect === 'sqlite' ? 'INTEGER PRIMARY KEY AUTOINCREMENT' : 'SERIAL PRIMARY KEY';
    for (const name of APP_TABLE_NAMES) {
      await exec(`CREATE TABLE ${name} (id ${id}, store_id TEXT NOT NULL, body TEXT NOT NULL)`);
    }
  });
  afterAll(async () => {
    await h?.close();
  });

  async function install(storeId: string): Promise<void> {
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser, storeId);
    const callback = h.platform.approveInstall({ authorizeUrl, storeId });
    const res = await browser.get(callback);
    expect(res.status).toBe(302);
  }

  it('purges every table of the uninstalled store and keeps the other store whole', async () => {
    const gone = h.storeId;
    const { storeId: kept } = h.platform.createStore({ name: 'Kept store' });
    for (const storeId of [gone, kept]) {
      await install(storeId);
      for (const table of tables) {
        await db.insert(table).values([
          { storeId, body: 'a' },
          { storeId, body: 'b' },
        ]);
      }
    }
    const rowsOf = async (storeId: string) => {
      const out: Record<string, number> = {};
      for (const name of [...KIT_TABLES, ...APP_TABLE_NAMES])
        out[name] = await count(name, storeId);
      return out;
    };
    const full = await rowsOf(kept);
    expect(full).toMatchObject({ store_app_installations: 1, app_notes: 2, app_settings: 2 });
    expect(full.store_app_sessions).toBeGreaterThanOrEqual(1);
    expect(await rowsOf(gone)).toEqual(full);

    const received: WebhookEvent<AppUninstalledPayload>[] = [];
    h.kit.webhooks.on('app.uninstalled', (event) => {
      received.push(event);
    });

    const { deliveryId } = h.platform.uninstall({ storeId: gone, clientId: h.clientId });
    const [delivery] = await h.platform.waitForDeliveries({ clientId: h.clientId, count: 1 });
    expect(delivery?.id).toBe(deliveryId);
    expect(delivery?.status).toBe('succeeded');
    expect(delivery?.attempts.at(-1)?.status).toBe(200);

    expect(received).toHaveLength(1);
    expect(received[0]?.id).toBe(deliveryId);
    expect(received[0]?.payload.data.store_id).toBe(gone);

    for (const name of [...KIT_TABLES, ...APP_TABLE_NAMES]) {
      expect({ name, rows: await count(name, gone) }).toEqual({ name, rows: 0 });
    }
    expect(await rowsOf(kept)).toEqual(full);
    expect(await h.kit.installations.get(gone)).toBeNull();
    expect(await h.kit.installations.get(kept)).not.toBeNull();
    // The logs name counts, never a token.
    const inst = await h.kit.installations.get(kept);
    expect(h.logs.join('\n')).not.toContain(inst!.accessToken);
  });
});
