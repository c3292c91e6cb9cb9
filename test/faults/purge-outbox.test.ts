/**
 * Issue 11 §3: a purge that fails after the webhook was acknowledged is not
 * lost. The pending purge is recorded with the delivery's dedupe row, shown
 * (log event, kit.pendingPurges()), retried with backoff until done, and
 * resumed when the app starts again after a kill -9.
 */
// kit.db is typed once narrowed by dialect; this file's harness runs on SQLite.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { eq, sql } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import request from 'supertest';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/run.js';
import { generateKey } from '../../src/crypto/index.js';
import type { SqliteDatabase } from '../../src/kit.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { createStorage } from '../../src/storage/index.js';
import { createCrashEnv } from '../crash/suite.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';
import {
  receiverApp,
  seedInstallation,
  signDelivery,
  uninstallPayload,
} from '../webhooks/fixtures.js';

const notes = sqliteTable('app_notes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  storeId: text('store_id').notNull(),
  body: text('body').notNull(),
});

const dir = mkdtempSync(join(tmpdir(), 'sak-purge-outbox-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('purge outbox', () => {
  let platform: Platform | undefined;
  let h: Harness | undefined;
  afterAll(async () => {
    await h?.close();
    await platform?.close();
  });

  it('an onPurge hook that throws once: the purge stays pending, is listed, and completes on retry', async () => {
    // The platform would retry only after 10 minutes: the outbox alone must finish the purge.
    platform = await startPlatform({ webhookRetrySchedule: [600] });
    let calls = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    h = await startHarness({
      databaseUrl: join(dir, 'hook.db'),
      platform,
      kit: {
        storeScopedTables: [notes],
        embedded: { enabled: false },
        onPurge: async () => {
          calls++;
          if (calls === 1) throw new Error('the file store is briefly unavailable');
          // Hold the retry until the test has looked at the pending state.
          await released;
        },
      },
    });
    await (h.kit.db as SqliteDatabase).run(
      sql`CREATE TABLE IF NOT EXISTS app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
    );
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    expect(
      (await browser.get(platform.approveInstall({ authorizeUrl, storeId: h.storeId }))).status,
    ).toBe(302);
    await (h.kit.db as SqliteDatabase)
      .insert(notes)
      .values({ storeId: h.storeId, body: 'merchant data' });

    const { deliveryId } = platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    await platform.waitForDeliveries({ clientId: h.clientId, count: 1, attempts: 1 });
    // First attempt failed: answered 500, the data is still there, the purge is pending.
    expect(platform.deliveries({ clientId: h.clientId })[0]!.attempts[0]!.status).toBe(500);
    const pending = await h.kit.pendingPurges();
    expect(pending).toMatchObject([{ eventId: deliveryId, storeId: h.storeId, attempts: 1 }]);
    expect(pending[0]!.lastError).toBe('Error');
    expect(
      await (h.kit.db as SqliteDatabase).select().from(notes).where(eq(notes.storeId, h.storeId)),
    ).toHaveLength(1);
    // The operator sees it too: `store-app purges`.
    const out: string[] = [];
    const code = await runCli(['purges', '--database-url', join(dir, 'hook.db')], {
      stdout: (l) => out.push(l),
      stderr: (l) => out.push(l),
      env: {},
    });
    expect(code).toBe(0);
    expect(out.join('\n')).toMatch(
      new RegExp(`store ${h.storeId} +event ${deliveryId} .*attempts 1 .*last error Error`),
    );
    const logged = (event: string) =>
      h!.logs.some(
        (l) => l.includes(`"event":"${event}"`) && l.includes(h!.storeId) && l.includes(deliveryId),
      );
    expect(logged('purge.pending')).toBe(true);
    expect(logged('purge.retry_scheduled')).toBe(true);

    // The outbox retries with backoff (first retry after ~1 s) until the purge is done.
    release();
    // Done at the purge's commit (its row turns into the sweep there); logged once the outbox finished.
    await vi.waitFor(
      async () => {
        expect(await h!.kit.pendingPurges()).toEqual([]);
        expect(logged('purge.completed')).toBe(true);
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(
      await (h.kit.db as SqliteDatabase).select().from(notes).where(eq(notes.storeId, h.storeId)),
    ).toEqual([]);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
    expect(calls).toBe(2);
    expect(logged('purge.completed')).toBe(true);
    // No retry from the platform was needed.
    expect(platform.deliveries({ clientId: h.clientId })[0]!.attempts).toHaveLength(1);
  });

  // Issue 23 §5: a redelivery acts only on what its first delivery recorded,
  // never on the redelivered body (which could name another store).
  it('a redelivered uninstall whose delivery was recorded without a pending purge arms nothing from its body', async () => {
    const storage = await createStorage({
      databaseUrl: join(dir, 'legacy.db'),
      encryptionKeys: [generateKey()],
    });
    try {
      const secret = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;
      const { app } = receiverApp(storage, { secrets: [secret] });
      const storeId = randomUUID();
      await seedInstallation(storage, storeId);
      const d = signDelivery(secret, uninstallPayload(storeId, new Date(Date.now() + 1000)));
      // The delivery id is known (recorded by an earlier version) with no purge recorded.
      await storage.webhooks.runOnce(d.id, 'app.uninstalled', async () => {});
      const res = await request(app).post('/webhooks').set(d.headers).send(d.body);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('duplicate');
      expect(await storage.installations.get(storeId)).not.toBeNull();
      expect(await storage.pendingPurges.list()).toEqual([]);
    } finally {
      await storage.close();
    }
  });

  it('kill -9 between the acknowledgement and the purge, restart: the data is gone within seconds', async () => {
    const file = join(dir, 'crash.db');
    const env = await createCrashEnv(file);
    const reader = () => new Database(file, { readonly: true, fileMustExist: true });
    const count = (storeId: string) => {
      const db = reader();
      try {
        return (
          db.prepare('SELECT count(*) AS n FROM app_records WHERE store_id = ?').get(storeId) as {
            n: number;
          }
        ).n;
      } finally {
        db.close();
      }
    };
    try {
      // Acknowledge after 100 ms; the purge then needs 3 s: the kill lands in between.
      env.config.ackTimeoutMs = 100;
      env.config.purgeDelayMs = 3000;
      await env.restart();
      const storeId = await env.install();
      const seeded = await fetch(`${env.proxy.url}/test/seed/${storeId}?rows=200`, {
        method: 'POST',
      });
      expect(seeded.status).toBe(200);
      expect(count(storeId)).toBe(200);

      const { deliveryId } = env.platform.uninstall({
        storeId,
        clientId: env.config.clientId,
      });
      const [delivery] = await env.platform.waitForDeliveries({
        clientId: env.config.clientId,
        count: 1,
      });
      expect(delivery!.id).toBe(deliveryId);
      // The platform has its 2xx and will never send this event again.
      expect(delivery!.status).toBe('succeeded');
      expect(delivery!.attempts.at(-1)!.status).toBe(202);
      await env.instance().kill();
      // Killed mid-purge: the purge transaction rolled back.
      expect(count(storeId)).toBe(200);

      env.config.purgeDelayMs = 0;
      const restarted = Date.now();
      await env.restart();
      const deadline = restarted + 10_000;
      const pendingPurges = () => {
        const db = reader();
        try {
          return (
            db
              .prepare("SELECT count(*) AS n FROM store_app_pending_purges WHERE kind = 'purge'")
              .get() as { n: number }
          ).n;
        } finally {
          db.close();
        }
      };
      // Done once the rows are gone and the entry completed (after the purge's scrub).
      while ((count(storeId) > 0 || pendingPurges() > 0) && Date.now() < deadline) {
        await sleep(100);
      }
      expect(count(storeId)).toBe(0);
      const db = reader();
      try {
        // Done; what stays is the sweep one purge horizon later (issue 22).
        expect(
          db
            .prepare('SELECT kind, count(*) AS n FROM store_app_pending_purges GROUP BY kind')
            .all(),
        ).toEqual([{ kind: 'sweep', n: 1 }]);
        expect(
          db
            .prepare('SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?')
            .get(storeId),
        ).toEqual({ n: 0 });
      } finally {
        db.close();
      }
      expect(env.platform.deliveries({ clientId: env.config.clientId })[0]!.attempts).toHaveLength(
        1,
      );
    } finally {
      await env.close();
    }
  }, 60_000);
});
