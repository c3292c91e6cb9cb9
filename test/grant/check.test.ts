/**
 * The platform's session check, used by the kit: `kit.checkGrant(storeId)` and the
 * background confirmation of every install, over real sockets against the local
 * platform, on a SQLite file and on the real Postgres.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser, begin, type Harness, SCOPES, startHarness } from '../install/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-grant-'));
let pg: TempDatabase;

beforeAll(async () => {
  pg = await createTempDatabase('sak_grant');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function install(h: Harness, storeId = h.storeId): Promise<void> {
  const browser = new Browser();
  const authorizeUrl = await begin(h, browser, storeId);
  const res = await browser.get(h.platform.approveInstall({ authorizeUrl, storeId }));
  if (res.status !== 302) throw new Error(`callback answered ${res.status}`);
}

const grantLogs = (h: Harness) =>
  h.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.component === 'grant');

describe.each([
  ['sqlite', () => join(dir, 'grant.db')],
  ['postgres', () => pg.url],
])('session check on %s', (_dialect, databaseUrl) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ databaseUrl: databaseUrl() });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('confirms each install in the background and answers checkGrant with the platform’s view', async () => {
    await install(h);
    await vi.waitFor(() =>
      expect(
        grantLogs(h).some((l) => l.msg === 'install: grant confirmed by the session check'),
      ).toBe(true),
    );
    const check = await h.kit.checkGrant(h.storeId);
    expect(check).toMatchObject({
      status: 'active',
      storeId: h.storeId,
      missingScopes: [],
      storedScopesDiffer: false,
    });
    if (check.status !== 'active') throw new Error('unreachable');
    expect([...check.scopes].sort()).toEqual([...SCOPES].sort());
    // The platform's clock, as written: a timestamp string, not a Date of ours.
    expect(typeof check.expiresAt).toBe('string');
    expect(Number.isNaN(Date.parse(check.expiresAt))).toBe(false);
    // No token in what was logged.
    const installation = await h.kit.installations.get(h.storeId);
    expect(h.logs.join('')).not.toContain(installation!.accessToken);
  });

  it('a revoked grant is reported and flagged, never purged', async () => {
    const { storeId } = h.platform.createStore({ name: 'Revoked' });
    await install(h, storeId);
    h.platform.revokeTokens({ storeId, clientId: h.clientId });
    expect(await h.kit.checkGrant(storeId)).toEqual({ status: 'revoked', storeId });
    const kept = await h.kit.installations.get(storeId);
    expect(kept).not.toBeNull();
    expect(kept!.needsReauth).toBe(true);
    expect(await h.kit.checkGrant(storeId)).toEqual({
      status: 'reauthorization_required',
      storeId,
    });
  });

  it('a store that is not installed is not_installed', async () => {
    const { storeId } = h.platform.createStore({ name: 'Never installed' });
    expect(await h.kit.checkGrant(storeId)).toEqual({ status: 'not_installed', storeId });
  });

  it('a token that answers for another store is a store_mismatch', async () => {
    const a = h.platform.createStore({ name: 'A' }).storeId;
    const b = h.platform.createStore({ name: 'B' }).storeId;
    await install(h, b);
    const ofB = (await h.kit.installations.get(b))!;
    // A row for A holding B's grant (a mixed-up restore, a bug upstream): never installed
    // through the kit, so nothing of A is cached.
    await internalsOf(h.kit).storage.installations.upsert(a, {
      accessToken: ofB.accessToken,
      refreshToken: ofB.refreshToken,
      accessTokenExpiresAt: ofB.accessTokenExpiresAt,
      scopes: ofB.scopes,
    });
    expect(await h.kit.checkGrant(a)).toEqual({
      status: 'store_mismatch',
      storeId: a,
      platformStoreId: b,
    });
  });
});

describe('a session check path the platform does not serve', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      databaseUrl: join(dir, 'wrong-path.db'),
      kit: { oauth: { sessionCheckPath: '/oauth/whoami' } as never },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('keeps the install, warns naming oauth.sessionCheckPath, and checkGrant says how to fix it', async () => {
    await install(h);
    expect(await h.kit.installations.get(h.storeId)).not.toBeNull();
    await vi.waitFor(() =>
      expect(
        grantLogs(h).some(
          (l) => l.level === 40 && String(l.msg).includes('oauth.sessionCheckPath'),
        ),
      ).toBe(true),
    );
    await expect(h.kit.checkGrant(h.storeId)).rejects.toMatchObject({
      code: 'SESSION_CHECK_NOT_FOUND',
      status: 404,
    });
  });
});
