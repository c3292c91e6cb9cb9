/**
 * `store-app-kit/workers` start-up mistakes fail at once, naming the setting
 * and the fix (in Node: the checks are the entry's own, before any binding).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors/index.js';
import { createWorker, storeApp } from '../../src/workers/index.js';

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
