/**
 * Issue 22 §5, the tail of a burst: deliveries arriving at once on a pooled
 * database are recorded at their first attempt. Before the record gate each
 * delivery's record transaction waited for a pool connection inside its
 * storage deadline, so the tail of a burst failed with 503 and waited for the
 * platform's next retry tier. The real Postgres, a pool of 2, a short
 * `storage.timeoutMs` and a trigger that slows every dedupe insert; signed
 * uninstall deliveries POSTed at once over real sockets.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { storeApp } from '../../src/store-app.js';
import { offlineKitOptions } from '../helpers/config.js';
import { startHangingProxy } from '../helpers/hanging-proxy.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { newSecret, signDelivery, uninstallPayload } from './fixtures.js';

const N = 24;
const STORAGE_TIMEOUT_MS = 600;
let db: TempDatabase;

beforeAll(async () => {
  db = await createTempDatabase('sak_wh_burst');
});
afterAll(async () => {
  await db?.drop();
});

async function sql(statement: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return await c.query(statement);
  } finally {
    await c.end();
  }
}

/** A kit on the temp database whose dedupe inserts each take `sleepSeconds` more. */
async function startKit(ackTimeoutMs: number, sleepSeconds: number, databaseUrl = db.url) {
  const secret = newSecret();
  const kit = await storeApp(
    offlineKitOptions({
      environment: 'test',
      session: { secret: 's'.repeat(32) },
      logger: { instance: pino({ level: 'silent' }) },
      webhooks: { secrets: secret, ackTimeoutMs },
      storage: { databaseUrl, pool: { max: 2 }, timeoutMs: STORAGE_TIMEOUT_MS },
    }),
  );
  await sql('TRUNCATE store_app_webhook_deliveries');
  await sql(`CREATE OR REPLACE FUNCTION sak_slow_insert() RETURNS trigger AS $$
    BEGIN PERFORM pg_sleep(${sleepSeconds}); RETURN NEW; END $$ LANGUAGE plpgsql`);
  await sql(`CREATE OR REPLACE TRIGGER sak_slow_insert BEFORE INSERT ON store_app_webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION sak_slow_insert()`);
  const app = express();
  app.use(kit.middleware());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  const deliver = (id: string) => {
    const d = signDelivery(secret, uninstallPayload(`st_${id}`), { id });
    return fetch(url, { method: 'POST', headers: d.headers, body: d.body });
  };
  const close = async () => {
    await new Promise((r) => server.close(r));
    await kit.close();
  };
  return { kit, deliver, close };
}

async function recorded(): Promise<number> {
  const r = await sql('SELECT COUNT(*)::int AS n FROM store_app_webhook_deliveries');
  return r.rows[0].n as number;
}

describe('a burst of deliveries on Postgres with a pool of 2', () => {
  it('every delivery is recorded at its first attempt: none fails on the wait for a pool connection', async () => {
    const k = await startKit(15_000, 0.1);
    try {
      const ids = Array.from({ length: N }, (_, i) => `msg_burst_${i}`);
      const answers = await Promise.all(ids.map((id) => k.deliver(id)));
      const statuses = answers.map((a) => a.status);
      // Without the gate the tail of the queue passed the 600 ms storage deadline: 503.
      expect(statuses).toEqual(ids.map(() => 200));
      expect(await recorded()).toBe(N);
      await vi.waitFor(
        async () => expect(await internalsOf(k.kit).storage.pendingPurges.list()).toEqual([]),
        {
          timeout: 20_000,
        },
      );
    } finally {
      await k.close();
    }
  });

  it('past the wait bound a delivery gets 503 with Retry-After, every acknowledged one is recorded, and a retry is recorded once', async () => {
    // Bound: ackTimeoutMs - storage.timeoutMs - 50 ms = 550 ms; the burst needs ~N x 0.25 s.
    const k = await startKit(1200, 0.25);
    try {
      const ids = Array.from({ length: N }, (_, i) => `msg_bound_${i}`);
      const answers = await Promise.all(ids.map((id) => k.deliver(id)));
      const refused: string[] = [];
      const acknowledged: string[] = [];
      for (const [i, a] of answers.entries()) {
        // 202 is allowed (the record committed, its purge is still running), 500 is not.
        expect([200, 202, 503]).toContain(a.status);
        if (a.status === 503) {
          expect(a.headers.get('retry-after')).toBe('5');
          expect(((await a.json()) as { code: string }).code).toBe('STORAGE_UNAVAILABLE');
          refused.push(ids[i]!);
        } else {
          acknowledged.push(ids[i]!);
        }
      }
      // Every acknowledged delivery was recorded before its answer.
      const rows = await sql('SELECT webhook_id FROM store_app_webhook_deliveries');
      const ids_ = new Set(rows.rows.map((r) => r.webhook_id as string));
      for (const id of acknowledged) expect(ids_.has(id)).toBe(true);
      // More than fit in the bound: some waited too long and were refused unrecorded.
      expect(refused.length).toBeGreaterThan(0);
      await sql('DROP TRIGGER sak_slow_insert ON store_app_webhook_deliveries');
      // The platform's retries, one at a time: every refused delivery is recorded now, once.
      for (const id of refused) expect((await k.deliver(id)).status).toBe(200);
      expect(await recorded()).toBe(N);
    } finally {
      await k.close();
    }
  });

  it('a burst while the database hangs: every delivery answers 503 with Retry-After, none 202, and all are recorded on retry once it answers again', async () => {
    const proxy = await startHangingProxy(5432);
    const k = await startKit(2000, 0, proxy.via(db.url));
    try {
      proxy.hang();
      const ids = Array.from({ length: 8 }, (_, i) => `msg_hung_${i}`);
      const answers = await Promise.all(ids.map((id) => k.deliver(id)));
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.headers.get('retry-after')).toBe('5');
      }
      proxy.resume();
      // The gate gave its slots back when the abandoned records failed: no restart needed.
      for (const id of ids) {
        await vi.waitFor(async () => expect((await k.deliver(id)).status).toBe(200), {
          timeout: 20_000,
          interval: 300,
        });
      }
      expect(await recorded()).toBe(ids.length);
    } finally {
      await proxy.close();
      // It used to hang here: a transaction whose BEGIN failed kept its pooled
      // connection (src/storage/pg-connection-guard.ts), and pool.end() waited for it.
      await k.close();
    }
  }, 60_000);
});
