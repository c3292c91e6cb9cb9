/**
 * The kit against a faulty platform, over real sockets: installs that fail
 * cleanly and recover, a refresh whose answer is lost, and API error storms
 * absorbed by the client's retries.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { SERVERS, type ServerDatabase } from '../helpers/databases.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-faults-kit-'));
let serverDb: ServerDatabase | undefined;
let h: Harness;
let purges: (storeId: string) => Promise<number>;

afterAll(async () => {
  await serverDb?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const PURGES = 'select counts from store_app_purge_audit where store_id = ?';

describe.each(['sqlite', ...SERVERS.map((s) => s.dialect)])('kit under faults on %s', (dialect) => {
  beforeAll(async () => {
    let databaseUrl: string;
    if (dialect === 'sqlite') {
      const file = join(dir, 'faults.db');
      databaseUrl = file;
      purges = async (storeId) => {
        const db = new Database(file, { readonly: true });
        try {
          return db.prepare(PURGES).all(storeId).length;
        } finally {
          db.close();
        }
      };
    } else {
      await serverDb?.drop();
      const db = await SERVERS.find((s) => s.dialect === dialect)!.create('sak_faults');
      serverDb = db;
      databaseUrl = db.url;
      purges = async (storeId) => (await db.rows(PURGES, [storeId])).length;
    }
    h = await startHarness({
      databaseUrl,
      kit: {
        // Short enough that a hanging token endpoint fails the test quickly, long enough that
        // the injected latency (up to 150 ms) never reaches it on a loaded CI machine.
        oauth: { tokenTimeoutMs: 2000 } as never,
        client: { retries: { max: 4, baseDelayMs: 1, maxDelayMs: 20 } },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
  });
  afterEach(() => {
    h.platform.setFaults({});
  });

  async function callback(): Promise<Response> {
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    return browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
  }

  describe('install under faults', () => {
    it('token endpoint 5xx, 429, hang or reset: a 502 page, nothing stored; healed, the install completes', async () => {
      for (const faults of [
        { token: { errorRate: 1 } },
        { token: { rateLimitRate: 1 } },
        { tokenTimeout: true },
        { token: { resetRate: 1 } },
      ]) {
        h.platform.setFaults(faults);
        const started = performance.now();
        const res = await callback();
        expect(res.status, JSON.stringify(faults)).toBe(502);
        expect(res.headers.get('x-store-app-error')).toBe(E.TOKEN_EXCHANGE_FAILED);
        expect(performance.now() - started).toBeLessThan(5000);
        expect(await h.kit.installations.get(h.storeId)).toBeNull();
      }
      h.platform.setFaults({});
      expect((await callback()).status).toBe(302);
      expect(await h.kit.installations.get(h.storeId)).not.toBeNull();
    });

    it('a slow platform (latency on every group) still installs', async () => {
      h.platform.setFaults({
        authorize: { latencyMs: 50 },
        token: { latencyMs: 100, jitterMs: 50 },
      });
      expect((await callback()).status).toBe(302);
      expect(h.platform.faultStats().delayed).toBeGreaterThan(0);
    });
  });

  describe('API and refresh under faults', () => {
    it('a storm of 5xx and 429 on the API is absorbed by the client retries', async () => {
      h.platform.setFaults({
        seed: 11,
        api: { errorRate: 0.3, rateLimitRate: 0.2, retryAfterSeconds: 0 },
      });
      const before = h.platform.faultStats();
      const client = h.kit.client(h.storeId);
      for (let i = 0; i < 10; i++) {
        const page = await client.products.list({ limit: 1 });
        expect(Array.isArray(page.data)).toBe(true);
      }
      const after = h.platform.faultStats();
      expect(after.errors + after.rateLimited).toBeGreaterThan(before.errors + before.rateLimited);
    });

    it('a refresh whose answer was lost once is recovered with the old refresh token (grace period)', async () => {
      const before = await h.kit.installations.get(h.storeId);
      const refreshes = h.platform.stats().tokenRequests.refresh_token;
      h.platform.advanceClock(86_400 + 1);
      h.platform.setFaults({ token: { resetRate: 1, count: 1 } });
      // The platform rotates, the answer is cut; the kit retries with the old token.
      const page = await h.kit
        .client(h.storeId)
        .products.list({ limit: 1 })
        .catch((e: unknown) => e);
      if (!Array.isArray((page as { data?: unknown }).data)) {
        // No retry inside the call: the next call recovers.
        const again = await h.kit.client(h.storeId).products.list({ limit: 1 });
        expect(Array.isArray(again.data)).toBe(true);
      }
      expect(h.platform.faultStats().resets).toBeGreaterThanOrEqual(1);
      expect(h.platform.stats().tokenRequests.refresh_token).toBe(refreshes + 2);
      const after = await h.kit.installations.get(h.storeId);
      expect(after!.refreshToken).not.toBe(before!.refreshToken);
    });

    it('refresh answers lost repeatedly exhaust the one-use grace: the store needs reauthorisation, never a crash', async () => {
      h.platform.advanceClock(86_400 + 1);
      h.platform.setFaults({ token: { resetRate: 1 } });
      const err = await h.kit
        .client(h.storeId)
        .products.list({ limit: 1 })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: expect.stringMatching(/REAUTHORIZATION_REQUIRED|REFRESH_UNAVAILABLE/),
      });
    });
  });

  describe('webhooks under faults', () => {
    it('an uninstall delivered three times at once runs the handler once and deletes the data once', async () => {
      expect((await callback()).status).toBe(302);
      let calls = 0;
      h.kit.webhooks.on('app.uninstalled', async () => {
        calls += 1;
      });
      h.platform.setFaults({ webhookDuplicate: 3 });
      h.platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
      const [delivery] = await h.platform.waitForDeliveries({ clientId: h.clientId });
      expect(delivery?.status).toBe('succeeded');
      expect(h.platform.faultStats().webhookDuplicated).toBe(2);
      expect(calls, 'handler runs').toBe(1);
      expect(await h.kit.installations.get(h.storeId)).toBeNull();
      // Copies racing the first purge find no installation left and purge nothing:
      // one audit row, the app's onPurge run once.
      expect(await purges(h.storeId), 'purge audit rows').toBe(1);
    });
  });
});
