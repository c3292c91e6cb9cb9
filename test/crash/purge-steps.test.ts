/**
 * kill -9 at every step of an uninstall's purge, each step hit exactly (the
 * app process hangs there: test/fixtures/app-instance.mjs `pauseAt`), then a
 * restart on the same database. Whatever the step, the purge ends done and its
 * purge-horizon sweep is scheduled: the sweep commits in the purge's own
 * transaction, so no crash separates them. App processes run the built
 * package: `npm run build` first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../src/platform/index.js';
import type { InstanceConfig } from '../fixtures/instances.js';
import { MARIADB, POSTGRES, type ServerKind } from '../helpers/databases.js';
import { type CrashEnv, createCrashEnv } from './suite.js';

const STEPS = ['handler', 'purge', 'committed', 'completed'] as const satisfies ReadonlyArray<
  NonNullable<InstanceConfig['pauseAt']>
>;

interface OutboxReader {
  /** The store's outbox entries (kind per row) and whether its installation is still there. */
  state(storeId: string): Promise<{ kinds: string[]; installations: number }>;
  close(): Promise<void>;
}

async function waitForDelivery(platform: Platform, id: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = platform.deliveries().find((x) => x.id === id);
    if (d && d.status !== 'pending') return d.status;
    if (Date.now() > deadline) return d?.status ?? 'missing';
    await sleep(50);
  }
}

function purgeStepsSuite(
  name: string,
  open: () => Promise<{ url: string; reader: OutboxReader; drop(): Promise<void> }>,
) {
  describe(`kill -9 at every step of an uninstall's purge (${name})`, () => {
    let env: CrashEnv & { close(): Promise<void> };
    let reader: OutboxReader;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      const db = await open();
      reader = db.reader;
      drop = db.drop;
      env = await createCrashEnv(db.url);
      // A horizon long enough that the scheduled sweep is still waiting when we look.
      env.config.purgeHorizonMs = 600_000;
      await env.restart();
    }, 60_000);

    afterAll(async () => {
      await env?.close().catch(() => undefined);
      await reader?.close().catch(() => undefined);
      await drop?.();
    }, 30_000);

    for (const step of STEPS) {
      it(`killed at "${step}": after a restart the purge is done and its sweep is scheduled`, async () => {
        const storeId = await env.install();
        env.config.pauseAt = step;
        await env.restart();
        const paused = new Promise<void>((resolve) => {
          env.instance().child.on('message', (m: { paused?: string }) => {
            if (m?.paused === step) resolve();
          });
        });
        const { deliveryId } = env.platform.uninstall({ storeId, clientId: env.config.clientId });
        const reached = await Promise.race([paused.then(() => true), sleep(20_000)]);
        expect(reached, `the process reached step "${step}"`).toBe(true);
        await env.instance().kill();
        delete env.config.pauseAt;
        await env.restart();
        expect(await waitForDelivery(env.platform, deliveryId)).toBe('succeeded');
        // The outbox finishes the purge (at once, or once the dead process's lease ends).
        const deadline = Date.now() + 30_000;
        let state = await reader.state(storeId);
        while (
          (state.kinds.includes('purge') || state.installations > 0) &&
          Date.now() < deadline
        ) {
          await sleep(100);
          state = await reader.state(storeId);
        }
        expect(state).toEqual({ kinds: ['sweep'], installations: 0 });
      }, 90_000);
    }
  });
}

const OUTBOX = 'SELECT kind FROM store_app_pending_purges WHERE store_id = ?';
const INSTALLED = 'SELECT count(*) AS n FROM store_app_installations WHERE store_id = ?';

function serverSuite(kind: ServerKind) {
  purgeStepsSuite(kind.label, async () => {
    const db = await kind.create('sak_purge_steps');
    return {
      url: db.url,
      reader: {
        async state(storeId) {
          const rows = await db.rows<{ kind: string }>(OUTBOX, [storeId]);
          return {
            kinds: rows.map((r) => r.kind),
            installations: await db.one(INSTALLED, [storeId]),
          };
        },
        close: async () => undefined,
      },
      drop: () => db.drop(),
    };
  });
}

purgeStepsSuite('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-purge-steps-'));
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
      async state(storeId) {
        const rows = handle().prepare(OUTBOX).all(storeId) as Array<{ kind: string }>;
        const { n } = handle().prepare(INSTALLED).get(storeId) as { n: number };
        return { kinds: rows.map((r) => r.kind), installations: n };
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
serverSuite(POSTGRES);
serverSuite(MARIADB);
