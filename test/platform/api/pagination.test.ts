import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from './helpers.js';

let t: TestApi;
beforeAll(async () => {
  t = createTestApi();
  // 60 products, one second apart, with repeated prices to exercise the id tie-break.
  for (let i = 0; i < 60; i++) {
    await t
      .as()
      .post('/products', { name: `P${String(i).padStart(2, '0')}`, price: (i % 7) + 1 })
      .expect(201);
    t.clock.advance(1);
  }
});
afterAll(() => t.close());

type Page = {
  data: Array<{ id: string; name: string; price: number; createdAt: string }>;
  pagination: { hasMore: boolean; nextCursor: string | null; total: number };
};

async function walk(query: string): Promise<Page['data']> {
  const all: Page['data'] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const sep = query ? '&' : '';
    const res = await t
      .as()
      .get(`/products?${query}${cursor ? `${sep}cursor=${cursor}` : ''}`)
      .expect(200);
    const page = res.body as Page;
    all.push(...page.data);
    if (!page.pagination.hasMore) {
      expect(page.pagination.nextCursor).toBeNull();
      return all;
    }
    cursor = page.pagination.nextCursor;
  }
  throw new Error('did not end');
}

describe('cursor pagination', () => {
  it('defaults to 25 newest first with total, hasMore and a cursor', async () => {
    const res = await t.as().get('/products').expect(200);
    expect(res.body.data).toHaveLength(25);
    expect(res.body.data[0].name).toBe('P59');
    expect(res.body.pagination).toMatchObject({ hasMore: true, total: 60 });
    expect(res.body.pagination.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('walks every record exactly once for each sort and order', async () => {
    for (const q of [
      'limit=7',
      'limit=7&order=asc',
      'sort=price&limit=9',
      'sort=price&order=asc&limit=4',
      'sort=name&order=asc&limit=11',
      'sort=updated_at&limit=250',
    ]) {
      const all = await walk(q);
      expect(all).toHaveLength(60);
      expect(new Set(all.map((p) => p.id)).size).toBe(60);
    }
    const byPrice = await walk('sort=price&order=asc&limit=8');
    const prices = byPrice.map((p) => p.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const byName = await walk('sort=name&order=asc&limit=13');
    expect(byName.map((p) => p.name)).toEqual([...byName.map((p) => p.name)].sort());
  });

  it('is stable when records are inserted between pages', async () => {
    const first = await t.as().get('/products?limit=10').expect(200);
    const seen = first.body.data.map((p: { id: string }) => p.id);
    // New products sort before the first page (newer) — they must not shift later pages.
    for (let i = 0; i < 5; i++)
      await t
        .as()
        .post('/products', { name: `late${i}` })
        .expect(201);
    let cursor = first.body.pagination.nextCursor;
    while (cursor) {
      const res = await t.as().get(`/products?limit=10&cursor=${cursor}`).expect(200);
      seen.push(...res.body.data.map((p: { id: string }) => p.id));
      cursor = res.body.pagination.nextCursor;
      if (seen.length === 20) {
        // And one inserted in the middle of an ascending walk's future shows up once.
        await t.as().post('/products', { name: 'middle' }).expect(201);
      }
    }
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
    const total = (await t.as().get('/products?limit=1')).body.pagination.total;
    expect(total).toBe(66);
  });

  it('answers 400 BAD_REQUEST for bad limit, sort, order or cursor', async () => {
    for (const q of [
      'limit=0',
      'limit=251',
      'limit=abc',
      'limit=-1',
      'limit=2.5',
      'sort=password',
      'order=up',
      'limit=1&limit=2',
    ]) {
      const res = await t.as().get(`/products?${q}`).expect(400);
      expect(res.body.code).toBe('BAD_REQUEST');
    }
    expect(
      (await t.as().get('/products?limit=250').expect(200)).body.data.length,
    ).toBeLessThanOrEqual(250);
    const { body } = await t.as().get('/products?limit=5').expect(200);
    const cursor: string = body.pagination.nextCursor;
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString());
    const tampered = [
      'garbage!',
      'e30',
      Buffer.from('not json').toString('base64url'),
      Buffer.from(JSON.stringify([decoded[0], decoded[1], 5, decoded[3]])).toString('base64url'),
      Buffer.from(JSON.stringify([decoded[0], decoded[1], decoded[2], 'x'])).toString('base64url'),
      `${cursor.slice(0, -3)}AAA`,
    ];
    for (const c of tampered) {
      const res = await t.as().get(`/products?limit=5&cursor=${encodeURIComponent(c)}`);
      expect([400]).toContain(res.status);
      expect(res.body.code).toBe('BAD_REQUEST');
    }
    // A cursor made for another sort is refused rather than silently skipping.
    const res = await t.as().get(`/products?limit=5&sort=price&cursor=${cursor}`).expect(400);
    expect(res.body.details[0].field).toBe('cursor');
  });
});
