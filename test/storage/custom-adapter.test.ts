/**
 * `storeApp({ storage: { adapter } })`: the kit on an app's own StorageAdapter
 * (the in-memory reference adapter), over real sockets against the local
 * platform. The adapter is wrapped to record every value it is handed and
 * returns, so the test can prove it only ever holds ciphertext.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { resolveConfig, type StoreAppOptions } from '../../src/config/index.js';
import { ConfigError, ConfigErrors } from '../../src/errors/index.js';
import type { StorageAdapter } from '../../src/storage/contract.js';
import { validEnv } from '../helpers/config.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';
import { createMemoryDatabase, type MemoryTx, openMemoryAdapter } from './memory-adapter.js';

/** Wraps every method (nested namespaces too) to log what goes in and comes out, as JSON. */
function recording<T extends object>(target: T, log: string[]): T {
  return new Proxy(target, {
    get(obj, key, receiver) {
      const value = Reflect.get(obj, key, receiver);
      if (typeof value === 'function') {
        return (...args: unknown[]) => {
          log.push(JSON.stringify(args.filter((a) => typeof a !== 'function')));
          const out = value.apply(obj, args);
          if (out instanceof Promise) {
            return out.then((r: unknown) => {
              log.push(JSON.stringify(r ?? null));
              return r;
            });
          }
          return out;
        };
      }
      return typeof value === 'object' && value !== null ? recording(value, log) : value;
    },
  });
}

describe('the kit on an app-provided StorageAdapter', () => {
  const memory = createMemoryDatabase();
  const seen: string[] = [];
  const purged: Array<{ storeId: string; tx: MemoryTx }> = [];
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      databaseUrl: 'unused',
      kit: {
        storage: { adapter: recording(openMemoryAdapter(memory), seen) },
        onPurge: (storeId, tx) => {
          purged.push({ storeId, tx: tx as MemoryTx });
        },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('installs, keeps the session in the adapter, and the adapter never sees a plaintext token', async () => {
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    const callback = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    expect((await browser.get(callback)).status).toBe(302);
    const me = await browser.get(`${h.appUrl}/`);
    expect(await me.json()).toEqual({ storeId: h.storeId });
    // The browser session is a row of the adapter, not of a MemoryStore.
    expect([...memory.sessions.values()].map((s) => s.storeId)).toContain(h.storeId);

    const installation = await h.kit.installations.get(h.storeId);
    expect(installation?.accessToken).toBeTruthy();
    expect(installation?.refreshToken).toBeTruthy();
    // The stored (sealed, then opened) token works against the platform.
    await expect(h.kit.client(h.storeId).products.list()).resolves.toBeDefined();

    const everything = seen.join('\n');
    const stored = memory.installations.get(h.storeId)!;
    expect(everything).toContain(stored.accessTokenEnc);
    for (const secret of [installation!.accessToken, installation!.refreshToken!]) {
      expect(everything).not.toContain(secret);
      expect(JSON.stringify([...memory.installations.values()])).not.toContain(secret);
    }
    expect(h.kit.dialect).toBe('custom');
    expect(h.kit.db).toBeUndefined();
  });

  it('an uninstall webhook purges through the adapter, with onPurge in its transaction', async () => {
    h.platform.uninstall({ storeId: h.storeId, clientId: h.clientId });
    const [delivery] = await h.platform.waitForDeliveries({ clientId: h.clientId, count: 1 });
    expect(delivery?.status).toBe('succeeded');
    expect(memory.installations.has(h.storeId)).toBe(false);
    expect([...memory.sessions.values()].map((s) => s.storeId)).not.toContain(h.storeId);
    expect(purged.map((p) => p.storeId)).toEqual([h.storeId]);
    expect(typeof purged[0]?.tx.write).toBe('function');
    // Nothing pending: the purge is done; its entry stays only as the sweep due a purge horizon later.
    expect([...memory.outbox.values()].map((e) => ({ storeId: e.storeId, kind: e.kind }))).toEqual([
      { storeId: h.storeId, kind: 'sweep' },
    ]);
  });

  it('the health report reads the database through the adapter', async () => {
    const report = await h.kit.health();
    expect(report.database).toMatchObject({ status: 'up', error: null });
    expect(report.purges).toEqual({ pending: 0, oldestAgeSeconds: null, failing: 0 });
  });

  it('internalsOf(kit).storage.transaction() is for the built-in database only', async () => {
    await expect(internalsOf(h.kit).storage.transaction(async () => 1)).rejects.toBeInstanceOf(
      ConfigError,
    );
  });
});

describe('storage.adapter is checked at start', () => {
  const ENV = validEnv();
  const problems = (options: StoreAppOptions, env: Record<string, string> = ENV): ConfigError[] => {
    try {
      resolveConfig(options, env);
    } catch (err) {
      if (err instanceof ConfigErrors) return [...err.problems];
      if (err instanceof ConfigError) return [err];
      throw err;
    }
    return [];
  };
  const adapter = () => openMemoryAdapter(createMemoryDatabase());

  it('an adapter missing a method fails naming the method', () => {
    const full = adapter();
    const broken = { ...full, sessions: { ...full.sessions, touch: undefined } };
    const [problem] = problems({ storage: { adapter: broken as unknown as StorageAdapter } });
    expect(problem?.setting).toBe('storage.adapter');
    expect(problem?.message).toContain('sessions.touch()');
    const [notObject] = problems({ storage: { adapter: 'redis' as never } });
    expect(notObject?.setting).toBe('storage.adapter');
    const [noClaims] = problems({
      storage: { adapter: { ...full, claimOnce: undefined } as unknown as StorageAdapter },
    });
    expect(noClaims?.message).toContain('claimOnce()');
    // Every missing method in one message, not one per start.
    const [several] = problems({
      storage: {
        adapter: {
          ...full,
          claimOnce: undefined,
          sessions: { ...full.sessions, touch: undefined },
        } as unknown as StorageAdapter,
      },
    });
    expect(several?.message).toContain('lacks claimOnce(), sessions.touch();');
  });

  it('a complete adapter is accepted, and DATABASE_URL is not read beside it', () => {
    const a = adapter();
    const config = resolveConfig(
      { storage: { adapter: a } },
      { ...ENV, DATABASE_URL: 'mysql://not-read' },
    );
    expect(config.storage.adapter).toBe(a);
  });

  it('an adapter beside databaseUrl, or beside storeScopedTables, fails at start', () => {
    expect(
      problems({ storage: { adapter: adapter(), databaseUrl: './x.db' } }).map((p) => p.setting),
    ).toContain('storage.adapter');
    expect(
      problems({ storage: { adapter: adapter() }, storeScopedTables: [{}] }).map((p) => p.setting),
    ).toContain('storeScopedTables');
  });
});
