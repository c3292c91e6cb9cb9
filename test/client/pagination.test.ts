/**
 * Cursor pagination over thousands of records on the local platform: every
 * record once, pages fetched lazily (one page held at a time).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseInvalidError } from '../../src/client/errors.js';
import type { StoreApiClient } from '../../src/client/index.js';
import type { Page } from '../../src/client/types.js';
import { createFixture, type Fixture } from './setup.js';

let fx: Fixture;
let client: StoreApiClient;
let requests = 0;

beforeAll(async () => {
  fx = await createFixture();
  const inst = await fx.install({ seed: 3000 });
  const counting: typeof fetch = (url, init) => {
    requests++;
    return fetch(url, init);
  };
  client = fx.runtime({ client: { fetch: counting } }).client(inst.storeId);
});
afterAll(async () => {
  await fx?.close();
});

describe('paginate', () => {
  it('yields every product exactly once across pages of 250', async () => {
    requests = 0;
    const ids = new Set<string>();
    let count = 0;
    for await (const p of client.paginate(client.products.list, { limit: 250 })) {
      ids.add(p.id);
      count++;
    }
    expect(count).toBe(3000);
    expect(ids.size).toBe(3000);
    expect(requests).toBe(12);
  });

  it('fetches lazily: breaking after the first page costs one request', async () => {
    requests = 0;
    let n = 0;
    for await (const _ of client.products.list.listAll({
      limit: 250,
      sort: 'name',
      order: 'asc',
    })) {
      if (++n === 250) break;
    }
    expect(requests).toBe(1);
  });

  it('passes filters to every page', async () => {
    let n = 0;
    for await (const o of client.orders.list.listAll({ limit: 100, status: 'open' })) {
      expect(o.status).toBe('open');
      n++;
    }
    expect(n).toBeGreaterThan(0);
  });

  it('stops with ResponseInvalidError when a cursor repeats', async () => {
    const looping = async (): Promise<Page<{ id: string }>> => ({
      data: [{ id: 'x' }],
      pagination: { hasMore: true, nextCursor: 'same', total: 2 },
    });
    const it = client.paginate(looping);
    const seen: string[] = [];
    const err = await (async () => {
      for await (const r of it) seen.push(r.id);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseInvalidError);
    expect(seen).toEqual(['x', 'x']);
  });
});
