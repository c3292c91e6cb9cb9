/**
 * Exactly one refresh across processes: app processes share one database
 * (a SQLite file, then Postgres and MariaDB); the platform's clock is moved past the
 * token's expiry; 200 requests through authenticated() spread over the
 * processes. Workers import the built dist/ (run `npm run build` first).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createSessionTokens } from '../../src/authenticated/session-token.js';
import { createFixture, type Fixture } from '../client/setup.js';
import { SERVERS } from '../helpers/databases.js';

const here = dirname(fileURLToPath(import.meta.url));
const workerPath = join(here, 'fixtures', 'worker.mjs');
const APP_URL = 'http://127.0.0.1:9';

async function startWorkers(fx: Fixture, n: number, sessionSecret: string) {
  if (!existsSync(join(here, '../../dist/refresh/manager.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before this test.');
  }
  const config = {
    databaseUrl: fx.databaseUrl,
    encryptionKey: fx.encryptionKey,
    tokenUrl: `${fx.platform.authUrl}/oauth/token`,
    apiUrl: fx.platform.apiUrl,
    clientId: fx.clientId,
    clientSecret: fx.clientSecret,
    sessionSecret,
    appUrl: APP_URL,
  };
  const workers: Array<{ child: ChildProcess; port: number }> = [];
  await Promise.all(
    Array.from({ length: n }, async () => {
      const child = fork(workerPath, [], {
        env: { ...process.env, SAK_WORKER_CONFIG: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const port = await new Promise<number>((resolve, reject) => {
        child.once('message', (m: { port: number }) => resolve(m.port));
        child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      });
      workers.push({ child, port });
    }),
  );
  return workers;
}

async function stopWorkers(workers: Array<{ child: ChildProcess }>) {
  await Promise.all(
    workers.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.send('close');
          setTimeout(() => child.kill(), 5000).unref();
        }),
    ),
  );
}

async function run(fx: Fixture, processes: number, total: number) {
  const sessionSecret = randomBytes(32).toString('base64url');
  const inst = await fx.install({ seed: 3 });
  const workers = await startWorkers(fx, processes, sessionSecret);
  try {
    const { token } = await createSessionTokens({
      secrets: [sessionSecret],
      clientId: fx.clientId,
      issuer: APP_URL,
      ttlSeconds: 300,
      clockToleranceSeconds: 5,
    }).mint(inst.storeId, { installedAt: inst.installedAt.getTime() });
    // Warm every process (caches the installation), then expire the token on the platform only.
    await Promise.all(
      workers.map((w) =>
        fetch(`http://127.0.0.1:${w.port}/api/first-product`, {
          headers: { authorization: `Bearer ${token}` },
        }).then((r) => expect(r.status).toBe(200)),
      ),
    );
    fx.platform.advanceClock(86_400 + 60);
    const before = fx.refreshCalls();
    const statuses = await Promise.all(
      Array.from({ length: total }, (_, i) =>
        fetch(`http://127.0.0.1:${workers[i % workers.length]!.port}/api/first-product`, {
          headers: { authorization: `Bearer ${token}` },
        }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(fx.refreshCalls() - before).toBe(1);
    const stored = await fx.storage.installations.get(inst.storeId);
    expect(stored!.version).toBe(inst.version + 1);
  } finally {
    await stopWorkers(workers);
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('one refresh across processes', () => {
  it('4 processes sharing one SQLite file, 200 requests', async () => {
    const fx = await createFixture({ rateLimit: { concurrent: 500, perMinute: 100_000 } });
    cleanups.push(() => fx.close());
    await run(fx, 4, 200);
  }, 60_000);

  for (const server of SERVERS) {
    it(`2 processes sharing ${server.label}, 200 requests`, async () => {
      const db = await server.create('sak_refresh');
      cleanups.push(() => db.drop());
      const fx = await createFixture({
        databaseUrl: db.url,
        rateLimit: { concurrent: 500, perMinute: 100_000 },
      });
      cleanups.push(() => fx.close());
      await run(fx, 2, 200);
    }, 60_000);
  }
});
