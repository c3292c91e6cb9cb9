/**
 * Issue 11 §1: a replayed authorization code must not destroy a live store.
 * - The callback refuses a code this app already exchanged, before the
 *   platform sees it (against both platform behaviours: the document's
 *   "invalid_grant, tokens unchanged" and RFC 6749 §4.1.2 revocation).
 * - token_revoked never deletes data: the installation is flagged for
 *   re-authorisation (storage field + log event), API calls throw a typed
 *   error, authenticated routes send the merchant through the install.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq, sql } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReauthorizationRequiredError, TokenRevokedError } from '../../src/client/errors.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const notes = sqliteTable('app_notes', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  storeId: text('store_id').notNull(),
  body: text('body').notNull(),
});

const dir = mkdtempSync(join(tmpdir(), 'sak-code-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function harnessOn(platform: Platform, name: string): Promise<Harness> {
  const h = await startHarness({
    databaseUrl: join(dir, `${name}.db`),
    platform,
    kit: { storeScopedTables: [notes], embedded: { enabled: false } },
  });
  await h.kit.db.run(
    sql`CREATE TABLE IF NOT EXISTS app_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, store_id TEXT NOT NULL, body TEXT NOT NULL)`,
  );
  return h;
}

/** The merchant installs; returns the callback URL (with its code) they used. */
async function merchantInstalls(h: Harness): Promise<string> {
  const browser = new Browser();
  const authorizeUrl = await begin(h, browser);
  const callbackUrl = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
  expect((await browser.get(callbackUrl)).status).toBe(302);
  await h.kit.db.insert(notes).values({ storeId: h.storeId, body: 'merchant data' });
  return callbackUrl;
}

/** Someone who saw the callback URL replays its code through an install they began. */
async function attackerReplays(h: Harness, callbackUrl: string): Promise<Response> {
  const attacker = new Browser();
  const theirs = new URL(await begin(h, attacker));
  const forged = new URL(callbackUrl);
  forged.searchParams.set('state', theirs.searchParams.get('state')!);
  return attacker.get(forged.toString());
}

const noteCount = async (h: Harness) =>
  (await h.kit.db.select().from(notes).where(eq(notes.storeId, h.storeId))).length;

describe.each([
  ['the document (invalid_grant, tokens unchanged)', false],
  ['RFC 6749 §4.1.2 (revokeOnCodeReplay: true)', true],
])('replayed authorization code, platform behaving as %s', (_label, revokeOnCodeReplay) => {
  let platform: Platform;
  let h: Harness;
  beforeAll(async () => {
    platform = await startPlatform({ revokeOnCodeReplay });
    h = await harnessOn(platform, `replay-${revokeOnCodeReplay}`);
  });
  afterAll(async () => {
    await h?.close();
    await platform?.close();
  });

  it('a replayed authorization code is refused before the platform is called; the live store keeps tokens and data', async () => {
    const callbackUrl = await merchantInstalls(h);
    const exchanges = platform.stats().tokenRequests.authorization_code;
    const replay = await attackerReplays(h, callbackUrl);
    expect(replay.status).toBe(400);
    expect(replay.headers.get('x-store-app-error')).toBe(E.CODE_REPLAYED);
    expect(platform.stats().tokenRequests.authorization_code).toBe(exchanges);
    // The merchant's installation still works and nothing was deleted.
    await expect(h.kit.client(h.storeId).products.list({ limit: 1 })).resolves.toBeTruthy();
    expect(await noteCount(h)).toBe(1);
    expect((await h.kit.installations.get(h.storeId))?.needsReauth).toBe(false);
  });
});

describe('token_revoked / invalid_grant from the platform never delete data', () => {
  let platform: Platform;
  let h: Harness;
  beforeAll(async () => {
    platform = await startPlatform();
    h = await harnessOn(platform, 'revoked');
  });
  afterAll(async () => {
    await h?.close();
    await platform?.close();
  });

  it('token_revoked flags the installation for re-authorisation, keeps its data, and sends the merchant through install', async () => {
    await merchantInstalls(h);
    const client = h.kit.client(h.storeId);
    await client.products.list({ limit: 1 });
    platform.revokeTokens({ storeId: h.storeId, clientId: h.clientId });

    await expect(client.products.list({ limit: 1 })).rejects.toBeInstanceOf(TokenRevokedError);
    // The state is visible: storage field and a log event.
    const flagged = await h.kit.installations.get(h.storeId);
    expect(flagged?.needsReauth).toBe(true);
    expect(
      h.logs.some(
        (l) => l.includes('"event":"installation.needs_reauth"') && l.includes(h.storeId),
      ),
    ).toBe(true);
    // Nothing was deleted.
    expect(await noteCount(h)).toBe(1);
    // Later API calls: a typed error with a stable code.
    const err = await client.products.list({ limit: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReauthorizationRequiredError);
    expect((err as ReauthorizationRequiredError).code).toBe('REAUTHORIZATION_REQUIRED');

    // Authenticated routes send the merchant through the install again.
    const app = express();
    app.use(h.kit.middleware());
    app.get('/page', h.kit.authenticated(), (_req, res) => {
      res.json({ ok: true });
    });
    const { token } = await h.kit.sessionToken(h.storeId);
    const xhr = await request(app)
      .get('/page')
      .set('authorization', `Bearer ${token}`)
      .set('accept', 'application/json');
    expect(xhr.status).toBe(401);
    expect(xhr.body.code).toBe('REAUTHORIZATION_REQUIRED');
    expect(xhr.headers['x-store-app-reauthorize']).toContain(h.storeId);

    // Installing again clears the flag; the data is still there.
    await merchantInstalls(h);
    expect((await h.kit.installations.get(h.storeId))?.needsReauth).toBe(false);
    await expect(h.kit.client(h.storeId).products.list({ limit: 1 })).resolves.toBeTruthy();
    expect(await noteCount(h)).toBe(2);
  });

  it('only a verified app.uninstalled or kit.purge() deletes the data', async () => {
    await h.kit.purge(h.storeId);
    expect(await noteCount(h)).toBe(0);
    expect(await h.kit.installations.get(h.storeId)).toBeNull();
  });
});
