/**
 * Issue 11 §2: uninstall vs reinstall is decided in ONE clock, the
 * platform's. The install is stamped with the platform's time (the token
 * response's Date header) and the uninstall event's `uninstalled_at` is
 * compared with that, never with the app's clock. With the platform clock
 * 10 min or 120 s behind or ahead of ours: a reinstall survives a redelivered
 * or late uninstall of the previous installation, and an uninstall after the
 * reinstall purges.
 */
// kit.db is typed once narrowed by dialect; this file's harness runs on SQLite.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { afterAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import type { SqliteDatabase } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { webhookHeaders } from '../../src/platform/webhooks/sign.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const notes = sqliteTable('app_notes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  storeId: text('store_id').notNull(),
  body: text('body').notNull(),
});

const dir = mkdtempSync(join(tmpdir(), 'sak-uninstall-clock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function install(h: Harness): Promise<void> {
  const browser = new Browser();
  const authorizeUrl = await begin(h, browser);
  const callback = await browser.get(
    h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }),
  );
  expect(callback.status).toBe(302);
  await (h.kit.db as SqliteDatabase)
    .insert(notes)
    .values({ storeId: h.storeId, body: 'merchant data' });
}

const noteCount = async (h: Harness) =>
  (await (h.kit.db as SqliteDatabase).select().from(notes).where(eq(notes.storeId, h.storeId)))
    .length;

/**
 * Posts the platform's uninstall payload again, signed, under `id` (same id =
 * redelivery), at `signedAtMs` in the platform's clock (a platform signs with its own).
 */
async function deliver(
  h: Harness,
  payload: unknown,
  id: string,
  signedAtMs: number,
): Promise<number> {
  const body = JSON.stringify(payload);
  const secret = internalsOf(h.kit).config.webhooks.secrets[0]!;
  const res = await fetch(`${h.appUrl}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...webhookHeaders(secret, id, Math.floor(signedAtMs / 1000), body),
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

describe.each([
  ['10 min behind the app', -600],
  ['120 s behind the app', -120],
  ['120 s ahead of the app', 120],
  ['10 min ahead of the app', 600],
])('platform clock %s', (_label, skewSeconds) => {
  let platform: Platform | undefined;
  let h: Harness | undefined;
  afterAll(async () => {
    await h?.close();
    await platform?.close();
  });

  it(`uninstall vs reinstall decided in the platform clock (skew ${skewSeconds} s)`, async () => {
    platform = await startPlatform();
    h = await startHarness({
      databaseUrl: join(dir, `skew${skewSeconds}.db`),
      platform,
      kit: { storeScopedTables: [notes], embedded: { enabled: false } },
    });
    await (h.kit.db as SqliteDatabase).run(
      sql`CREATE TABLE IF NOT EXISTS app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
    );
    platform.advanceClock(skewSeconds);

    // 1. Install, uninstall: the platform's own delivery purges.
    await install(h);
    platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    const [first] = await platform.waitForDeliveries({ clientId: h.clientId, count: 1 });
    expect(first!.status).toBe('succeeded');
    expect(await noteCount(h)).toBe(0);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();

    // 2. The merchant reinstalls a few seconds later (platform time).
    platform.advanceClock(3);
    await install(h);
    const reinstall = await h.kit.installations.get(h.storeId);
    expect(reinstall).not.toBeNull();
    // Stamped in the platform's clock (its Date header), not ours.
    const platformNow = Date.now() + (skewSeconds + 3) * 1000;
    expect(Math.abs(reinstall!.platformInstalledAt!.getTime() - platformNow)).toBeLessThan(5_000);

    // 3. The old uninstall again: redelivered (same id) and a late copy (new id).
    const signedAt = Date.now() + (skewSeconds + 3) * 1000;
    expect(await deliver(h, first!.payload, first!.id, signedAt)).toBe(200);
    expect(await deliver(h, first!.payload, `msg_${randomUUID()}`, signedAt)).toBe(200);
    expect(await noteCount(h)).toBe(1);
    expect((await h.kit.installations.get(h.storeId))?.accessToken).toBe(reinstall!.accessToken);

    // 4. An uninstall after the reinstall purges it.
    platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    const settled = await platform.waitForDeliveries({ clientId: h.clientId, count: 2 });
    expect(settled[1]!.status).toBe('succeeded');
    expect(await noteCount(h)).toBe(0);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
    expect(await h.kit.pendingPurges()).toEqual([]);
  });
});

describe('oauth.installTimeFromServerDate: false', () => {
  let platform: Platform | undefined;
  let h: Harness | undefined;
  afterAll(async () => {
    await h?.close();
    await platform?.close();
  });

  it('records no platform install time (installs are then compared in our clock)', async () => {
    platform = await startPlatform();
    h = await startHarness({
      databaseUrl: join(dir, 'no-server-date.db'),
      platform,
      kit: { embedded: { enabled: false }, oauth: { installTimeFromServerDate: false } },
    });
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    expect(
      (await browser.get(platform.approveInstall({ authorizeUrl, storeId: h.storeId }))).status,
    ).toBe(302);
    expect((await h.kit.installations.get(h.storeId))?.platformInstalledAt).toBeNull();
  });
});
