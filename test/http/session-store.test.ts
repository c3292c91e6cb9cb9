/**
 * Where the embedded app's sessions live: in the storage adapter unless the
 * app configures its own express-session store; a MemoryStore configured for
 * production is called out at start.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import session from 'express-session';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { memoryStoreWarning } from '../../src/core/session-store.js';
import { AdapterSessionStore } from '../../src/storage/index.js';
import { storeApp } from '../../src/store-app.js';
import { offlineKitOptions } from '../helpers/config.js';
import { Browser, begin, startHarness } from '../install/harness.js';
import { createMemoryDatabase, openMemoryAdapter } from '../storage/memory-adapter.js';

async function startLogs(environment: string, store?: session.Store) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const kit = await storeApp(
    offlineKitOptions({
      environment,
      session: { secret: randomBytes(32).toString('base64url'), ...(store ? { store } : {}) },
      logger: { instance: pino({ level: 'warn' }, destination) },
    }),
  );
  await kit.close();
  return lines.map((l) => JSON.parse(l) as { setting?: string; msg: string });
}

describe('session store', () => {
  it('warns at start when the app configures a MemoryStore in production', async () => {
    const logs = await startLogs('production', new session.MemoryStore());
    const warning = logs.find((l) => l.setting === 'session.store');
    expect(warning?.msg).toContain('MemoryStore');
    expect(warning?.msg).toContain('Remove session.store');
  });

  it('does not warn in development or test, nor for a persistent store, nor by default', async () => {
    expect(
      (await startLogs('test', new session.MemoryStore())).some(
        (l) => l.setting === 'session.store',
      ),
    ).toBe(false);
    expect((await startLogs('production')).some((l) => l.setting === 'session.store')).toBe(false);
    const persistent = new AdapterSessionStore(openMemoryAdapter(createMemoryDatabase()).sessions, {
      pruneIntervalMs: 0,
    });
    expect(memoryStoreWarning(persistent, 'production')).toBeUndefined();
    expect(memoryStoreWarning(new session.MemoryStore(), 'development')).toBeUndefined();
    // A MemoryStore from another copy of express-session is recognised by name.
    class MemoryStore extends session.Store {
      get() {}
      set() {}
      destroy() {}
    }
    expect(memoryStoreWarning(new MemoryStore(), 'staging')).toContain('MemoryStore');
  });

  it('refuses a session.store that is not a store, naming the option', async () => {
    await expect(startLogs('test', { get: 'no' } as never)).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      setting: 'session.store',
    });
  });

  it("the app's own store holds the session; by default the adapter does", async () => {
    const own = new session.MemoryStore();
    const memory = createMemoryDatabase();
    const h = await startHarness({
      databaseUrl: 'unused',
      kit: { storage: { adapter: openMemoryAdapter(memory) }, session: { store: own } },
    });
    try {
      const browser = new Browser();
      const authorizeUrl = await begin(h, browser);
      await browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
      expect(await (await browser.get(`${h.appUrl}/`)).json()).toEqual({ storeId: h.storeId });
      const held = await new Promise<number>((resolve, reject) =>
        own.length((err, n) => (err ? reject(err) : resolve(n ?? 0))),
      );
      expect(held).toBe(1);
      expect(memory.sessions.size).toBe(0);
    } finally {
      await h.close();
    }
  });
});
