/**
 * Issue 23 §5: a redelivered webhook id acts only on what its first delivery
 * recorded. A second body under a known id (signed: it needs the webhook
 * secret) must not purge the store it names.
 */
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  newSecret,
  openTestDb,
  receiverApp,
  seedAppRows,
  seedInstallation,
  signDelivery,
  type TestDb,
  uninstallPayload,
} from '../webhooks/fixtures.js';

describe('webhook redelivery with another body (issue 23 §5)', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a known id with a body naming an installed store is answered duplicate and purges nothing', async () => {
    const secret = newSecret();
    const { app, logs } = receiverApp(t.storage, { secrets: [secret] });
    const victim = randomUUID();
    await seedInstallation(t.storage, victim);
    await seedAppRows(t, victim);
    const at = new Date(Date.now() + 1000);

    // First delivery: an uninstall of a store this app never had.
    const first = signDelivery(secret, uninstallPayload(randomUUID(), at));
    const processed = await request(app).post('/webhooks').set(first.headers).send(first.body);
    expect(processed.status).toBe(200);
    expect(processed.body.status).toBe('processed');

    // Same webhook-id, another body: the installed store.
    const second = signDelivery(secret, uninstallPayload(victim, at), { id: first.id });
    const dup = await request(app).post('/webhooks').set(second.headers).send(second.body);
    expect(dup.status).toBe(200);
    expect(dup.body.status).toBe('duplicate');

    expect(await t.storage.installations.get(victim)).not.toBeNull();
    for (const table of ['app_notes', 'app_orders_cache', 'app_settings']) {
      expect(await t.count(table, victim)).toBe(3);
    }
    expect(await t.storage.pendingPurges.list()).toEqual([]);
    expect(
      logs.some((l) => (l.obj as { event?: string }).event === 'webhook.redelivery_mismatch'),
    ).toBe(false);
  });

  it('a redelivery whose first purge is still pending retries the recorded store, and a differing body is logged', async () => {
    const secret = newSecret();
    const { app, logs } = receiverApp(t.storage, { secrets: [secret] });
    const recordedStore = randomUUID();
    const other = randomUUID();
    await seedInstallation(t.storage, recordedStore);
    await seedInstallation(t.storage, other);
    const at = new Date(Date.now() + 1000);
    const first = signDelivery(secret, uninstallPayload(recordedStore, at));
    // The delivery and its pending purge are recorded, the purge has not run yet.
    await t.storage.webhooks.runOnce(first.id, 'app.uninstalled', async (_tx, delivery) => {
      await delivery.addPendingPurge({ eventId: first.id, storeId: recordedStore, eventAt: at });
    });

    const second = signDelivery(secret, uninstallPayload(other, at), { id: first.id });
    const dup = await request(app).post('/webhooks').set(second.headers).send(second.body);
    expect(dup.status).toBe(200);
    expect(dup.body.status).toBe('duplicate');
    expect(await t.storage.installations.get(recordedStore)).toBeNull();
    expect(await t.storage.installations.get(other)).not.toBeNull();
    const mismatch = logs.find(
      (l) => (l.obj as { event?: string }).event === 'webhook.redelivery_mismatch',
    );
    expect(mismatch?.level).toBe('warn');
    expect(JSON.stringify(mismatch)).not.toContain(other);
  });
});
