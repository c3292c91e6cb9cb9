/**
 * `store-app-kit/workers` start-up mistakes fail at once, naming the setting
 * and the fix (in Node: the checks are the entry's own, before any binding).
 * Its kit mounts on Hono (`storeAppHono(kit)`, as templates/workers does).
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors/index.js';
import { type StoreAppHonoEnv, storeAppHono } from '../../src/hono.js';
import { openBuiltinAdapter } from '../../src/storage/index.js';
import { createWorker, storeApp } from '../../src/workers/index.js';
import { validEnv } from '../helpers/config.js';

describe('store-app-kit/workers at start', () => {
  it('without a storage adapter: one ConfigError naming storage.adapter and d1Adapter', async () => {
    const failure = await storeApp({} as never, {}).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as ConfigError).setting).toBe('storage.adapter');
    expect((failure as Error).message).toContain('d1Adapter(env.DB)');
  });

  it('a failed start is not kept: the next request builds the kit again', async () => {
    let starts = 0;
    const worker = createWorker({
      options: () => {
        starts++;
        return {} as never;
      },
    });
    const ctx = { waitUntil: () => undefined };
    await expect(worker.fetch(new Request('https://app.test/'), {}, ctx)).rejects.toThrow(
      ConfigError,
    );
    await expect(worker.fetch(new Request('https://app.test/'), {}, ctx)).rejects.toThrow(
      ConfigError,
    );
    expect(starts).toBe(2);
  });
});

describe('store-app-kit/workers on Hono', () => {
  it('storeAppHono(kit) mounts the Workers kit: its routes, the header set, authenticated()', async () => {
    // Any adapter stands in for D1 here (in workerd: templates/workers' own suite).
    const adapter = await openBuiltinAdapter({ databaseUrl: ':memory:' });
    const kit = await storeApp({ storage: { adapter }, logger: { level: 'silent' } }, validEnv());
    try {
      const hono = storeAppHono(kit);
      const app = new Hono<StoreAppHonoEnv>();
      app.use('*', hono.middleware());
      app.get('/api/data', hono.authenticated(), (c) =>
        c.json({ storeId: c.get('store').storeId }),
      );
      app.get('/open', (c) => c.text('open'));

      // The kit's route (the install's start), answered as kit.fetch answers it.
      const install = await app.request('https://app.example.com/auth?store_id=s1');
      const direct = await kit.fetch(new Request('https://app.example.com/auth?store_id=s1'));
      expect(install.status).toBe(302);
      expect(direct?.status).toBe(302);
      // An app route gets the header set after it ran, as kit.secureResponse adds it.
      const open = await app.request('https://app.example.com/open');
      expect(await open.text()).toBe('open');
      const secured = kit.secureResponse(
        new Request('https://app.example.com/open'),
        new Response('open', { headers: { 'content-type': 'text/plain;charset=UTF-8' } }),
      );
      expect(Object.fromEntries(open.headers)).toEqual(Object.fromEntries(secured.headers));
      // Without a store: the kit's refusal, not the route.
      const refused = await app.request('https://app.example.com/api/data', {
        headers: { authorization: 'Bearer not-a-token' },
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
    } finally {
      await kit.close();
    }
  });
});
