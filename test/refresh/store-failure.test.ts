/**
 * A refreshed token pair whose write fails after the platform rotated the
 * refresh token is kept (sealed, in memory), served, and written once storage
 * accepts writes again; a process killed at that point is recovered by
 * another process inside the platform's grace period. Real sockets against
 * the local platform, a real full disk (tmpfs), a real Postgres.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createClientFactory } from '../../src/client/factory.js';
import { resolveClientOptions } from '../../src/client/options.js';
import { requestToken } from '../../src/oauth/token-endpoint.js';
import { createTokenManager } from '../../src/refresh/manager.js';
import { resolveRefreshOptions } from '../../src/refresh/options.js';
import { createFixture, type Fixture } from '../client/setup.js';
import { createTempDatabase, POSTGRES_ADMIN_URL, type TempDatabase } from '../helpers/postgres.js';
import { mountVolume } from '../helpers/volume.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A clock for the kit that follows the platform's when a test moves both. */
function clocks(fx: () => Fixture) {
  let offsetMs = 0;
  return {
    now: () => Date.now() + offsetMs,
    advance(seconds: number) {
      fx().platform.advanceClock(seconds);
      offsetMs += seconds * 1000;
    },
  };
}

function runtimeOn(fx: Fixture, now: () => number, refresh?: (t: string) => Promise<void>) {
  const endpoint = {
    url: `${fx.platform.authUrl}/oauth/token`,
    clientId: fx.clientId,
    clientSecret: fx.clientSecret,
    encoding: 'json' as const,
  };
  const tokens = createTokenManager({
    installations: fx.storage.installations,
    options: resolveRefreshOptions({ baseDelayMs: 50, storeRetryMaxDelayMs: 200 }),
    refresh: async (refreshToken, signal) => {
      const r = await requestToken(
        endpoint,
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { signal },
      );
      // Between the token response and the write.
      await refresh?.(refreshToken);
      return r;
    },
    now,
  });
  const clients = createClientFactory({
    options: resolveClientOptions({ baseUrl: fx.platform.apiUrl }),
    tokens,
  });
  return { tokens, client: (id: string) => clients.forStore(id) };
}

async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('storing refreshed tokens fails after the platform rotated them', () => {
  it('full disk (SQLite on a small tmpfs): the pair is served, stored once space is freed, and the grant outlives the grace period', async () => {
    const vol = mountVolume(3);
    cleanups.push(() => vol.close());
    const dir = vol.dir;
    let fx!: Fixture;
    const clock = clocks(() => fx);
    fx = await createFixture({ databaseUrl: `file:${join(dir, 'app.db')}`, now: clock.now });
    cleanups.push(() => fx.close());
    const inst = await fx.install({ seed: 1 });
    let filled = 0;
    const { tokens, client } = runtimeOn(fx, clock.now, async () => {
      // The volume fills up between the token response and the write.
      if (filled++ === 0) vol.fill(join(dir, 'app.db'));
    });
    await client(inst.storeId).products.list({ limit: 1 });

    clock.advance(86_400 + 60); // the access token expired: the next call refreshes
    const before = fx.refreshCalls();
    const page = await client(inst.storeId).products.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(fx.refreshCalls() - before).toBe(1);
    expect(tokens.pendingWrites()).toBe(1);
    const stale = await fx.storage.installations.get(inst.storeId);
    expect(stale!.version).toBe(inst.version); // the write really failed
    // Served from memory meanwhile: no second refresh (which would spend the grant).
    for (let i = 0; i < 3; i++) await client(inst.storeId).products.list({ limit: 1 });
    expect(fx.refreshCalls() - before).toBe(1);
    const served = await tokens.getAccessToken(inst.storeId);

    vol.free();
    await until(() => tokens.pendingWrites() === 0);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(inst.version + 1);
    expect(stored!.accessToken).toBe(served);
    expect(stored!.refreshToken).not.toBe(inst.refreshToken);

    // Past the platform's 60 s grace and the next expiry: the stored grant refreshes.
    clock.advance(86_400 + 120);
    await expect(client(inst.storeId).products.list({ limit: 1 })).resolves.toBeDefined();
    expect(fx.refreshCalls() - before).toBe(2);
  }, 60_000);

  it('Postgres connection killed between the token response and the write: served, then stored once the database is back', async () => {
    const db: TempDatabase = await createTempDatabase('sak_pending');
    cleanups.push(() => db.drop());
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    cleanups.push(async () => {
      await admin.query(`ALTER DATABASE "${db.name}" WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    });
    let fx!: Fixture;
    const clock = clocks(() => fx);
    fx = await createFixture({ databaseUrl: db.url, now: clock.now });
    cleanups.push(() => fx.close());
    const inst = await fx.install({ seed: 1 });
    let killed = 0;
    const { tokens, client } = runtimeOn(fx, clock.now, async () => {
      killed++;
      await admin.query(`ALTER DATABASE "${db.name}" WITH ALLOW_CONNECTIONS false`);
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [db.name],
      );
    });
    await client(inst.storeId).products.list({ limit: 1 });

    clock.advance(86_400 + 60);
    const page = await client(inst.storeId).products.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
    expect(killed).toBe(1);
    expect(tokens.pendingWrites()).toBe(1);
    const served = await tokens.getAccessToken(inst.storeId);

    await admin.query(`ALTER DATABASE "${db.name}" WITH ALLOW_CONNECTIONS true`);
    await until(() => tokens.pendingWrites() === 0);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(inst.version + 1);
    expect(stored!.accessToken).toBe(served);
    expect(stored!.needsReauth).toBe(false);

    clock.advance(86_400 + 120);
    await expect(client(inst.storeId).products.list({ limit: 1 })).resolves.toBeDefined();
    expect(killed).toBe(2);
  }, 60_000);

  it('kill -9 between the token response and the write: another process refreshes with the old token inside the grace period', async () => {
    const workerPath = join(
      dirname(fileURLToPath(import.meta.url)),
      'fixtures',
      'crash-at-write.mjs',
    );
    const fx = await createFixture();
    cleanups.push(() => fx.close());
    const installed = await fx.install({ seed: 1 });
    // Expiring in the row (the child's clock is the real one): its next use refreshes.
    const inst = await fx.storage.installations.upsert(installed.storeId, {
      ...installed,
      accessTokenExpiresAt: new Date(Date.now() + 10_000),
    });

    const child: ChildProcess = fork(workerPath, [], {
      env: {
        ...process.env,
        SAK_WORKER_CONFIG: JSON.stringify({
          databaseUrl: fx.databaseUrl,
          encryptionKey: fx.encryptionKey,
          tokenUrl: `${fx.platform.authUrl}/oauth/token`,
          clientId: fx.clientId,
          clientSecret: fx.clientSecret,
          leaseMs: 1000,
        }),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    cleanups.push(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    await new Promise<void>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`worker exited early (${code})`)));
      child.on('message', (m: { ready?: boolean; atWrite?: boolean }) => {
        if (m.ready) child.send({ refresh: inst.storeId });
        if (m.atWrite) resolve();
      });
    });
    child.removeAllListeners('exit');
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(fx.refreshCalls()).toBe(1); // the platform rotated; nothing was stored
    expect((await fx.storage.installations.get(inst.storeId))!.version).toBe(inst.version);

    // This process waits out the dead process's lease, then spends the old
    // refresh token once more inside the grace period.
    const other = createTokenManager({
      installations: fx.storage.installations,
      options: resolveRefreshOptions({ leaseMs: 1000, pollIntervalMs: 20 }),
      refresh: (refreshToken, signal) =>
        requestToken(
          {
            url: `${fx.platform.authUrl}/oauth/token`,
            clientId: fx.clientId,
            clientSecret: fx.clientSecret,
            encoding: 'json',
          },
          { grant_type: 'refresh_token', refresh_token: refreshToken },
          { signal },
        ),
    });
    const recovered = await other.getInstallation(inst.storeId);
    expect(recovered.version).toBe(inst.version + 1);
    expect(recovered.needsReauth).toBe(false);
    const clients = createClientFactory({
      options: resolveClientOptions({ baseUrl: fx.platform.apiUrl }),
      tokens: other,
    });
    await expect(clients.forStore(inst.storeId).products.list({ limit: 1 })).resolves.toBeDefined();
  }, 60_000);
});

describe('a pair waiting to be stored meets another process', () => {
  async function setup() {
    let fx!: Fixture;
    const clock = clocks(() => fx);
    fx = await createFixture({ now: clock.now });
    cleanups.push(() => fx.close());
    const inst = await fx.install({ seed: 1 });
    let failing = true;
    const installations = {
      ...fx.storage.installations,
      completeRefresh: async (
        ...a: Parameters<typeof fx.storage.installations.completeRefresh>
      ) => {
        if (failing) throw new Error('write refused');
        return fx.storage.installations.completeRefresh(...a);
      },
    };
    const tokens = createTokenManager({
      installations,
      options: resolveRefreshOptions({ baseDelayMs: 50, storeRetryMaxDelayMs: 200 }),
      refresh: (refreshToken, signal) =>
        requestToken(
          {
            url: `${fx.platform.authUrl}/oauth/token`,
            clientId: fx.clientId,
            clientSecret: fx.clientSecret,
            encoding: 'json',
          },
          { grant_type: 'refresh_token', refresh_token: refreshToken },
          { signal },
        ),
      now: clock.now,
    });
    clock.advance(86_400 + 60);
    const served = await tokens.getInstallation(inst.storeId);
    expect(tokens.pendingWrites()).toBe(1);
    return { fx, inst, tokens, served, allow: () => (failing = false) };
  }

  it('another process flagged the row (old refresh token refused after the grace period): the pair is stored and clears the flag', async () => {
    const { fx, inst, tokens, served, allow } = await setup();
    expect(await fx.storage.installations.markNeedsReauth(inst.storeId, inst.version)).toBe(true);
    allow();
    await until(() => tokens.pendingWrites() === 0);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.needsReauth).toBe(false);
    expect(stored!.accessToken).toBe(served.accessToken);
    expect(stored!.refreshToken).toBe(served.refreshToken);
  });

  it('another process stored newer tokens (a refresh inside the grace period, a reinstall): ours is dropped, theirs is used', async () => {
    const { fx, inst, tokens, allow } = await setup();
    const theirs = await fx.storage.installations.upsert(inst.storeId, {
      ...inst,
      accessToken: 'their-access-token',
      accessTokenExpiresAt: new Date(Date.now() + 10 * 86_400_000),
    });
    allow();
    await until(() => tokens.pendingWrites() === 0);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(theirs.version);
    expect(stored!.accessToken).toBe('their-access-token');
    expect((await tokens.getInstallation(inst.storeId)).accessToken).toBe('their-access-token');
  });

  it('a shutdown writes the pair once more before storage closes; one still refused is counted', async () => {
    const { fx, inst, tokens, served, allow } = await setup();
    // Still refused: the pair stays (and is lost with the process: another one re-refreshes).
    expect(await tokens.flushPendingWrites()).toBe(1);
    allow();
    // At once, not at the next retry: the kit's close calls this before storage closes.
    expect(await tokens.flushPendingWrites()).toBe(0);
    expect(tokens.pendingWrites()).toBe(0);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.refreshToken).toBe(served.refreshToken);
  });

  it('a purge drops the pair: it is never written back for a store that is gone', async () => {
    const { fx, inst, tokens, allow } = await setup();
    await fx.storage.purge(inst.storeId, { tables: [] });
    allow();
    await until(() => tokens.pendingWrites() === 0);
    expect(await fx.storage.installations.get(inst.storeId)).toBeNull();
  });
});
