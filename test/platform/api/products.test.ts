import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../../src/platform/api/index.js';
import { createTestApi, type TestApi, UNKNOWN_ID } from './helpers.js';

let t: TestApi;
beforeAll(() => {
  t = createTestApi();
});
afterAll(() => t.close());

const fullProduct = {
  name: 'Linen Shirt',
  description: 'Breathable.',
  status: 'active',
  price: 49.9,
  compareAtPrice: 59,
  sku: 'LS-1',
  barcode: '0123',
  weight: 0.25,
  weightUnit: 'kg',
  trackInventory: true,
  inventoryQuantity: 7,
  category: 'Apparel',
  tags: ['summer', 'linen'],
  images: [
    { url: 'https://cdn.example.com/b.jpg', alt: 'back', position: 1 },
    { url: 'https://cdn.example.com/a.jpg', alt: 'front', position: 0 },
  ],
  metadata: { origin: 'PT', nested: { a: 1 } },
  unknownField: 'ignored',
};

describe('products', () => {
  it('creates a product with the document shape (201) and reads it back', async () => {
    const res = await t.as().post('/products', fullProduct).expect(201);
    const p = res.body;
    expect(p).toMatchObject({
      name: 'Linen Shirt',
      slug: 'linen-shirt',
      status: 'active',
      price: 49.9,
      compareAtPrice: 59,
      currency: 'USD',
      weight: 0.25,
      weightUnit: 'kg',
      trackInventory: true,
      inventoryQuantity: 7,
      tags: ['summer', 'linen'],
      variants: [],
      metadata: { origin: 'PT', nested: { a: 1 } },
    });
    expect(p.images).toEqual([
      { url: 'https://cdn.example.com/a.jpg', alt: 'front', position: 0 },
      { url: 'https://cdn.example.com/b.jpg', alt: 'back', position: 1 },
    ]);
    expect(p).not.toHaveProperty('unknownField');
    expect(p.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(p.createdAt)).not.toBeNaN();
    const got = await t.as().get(`/products/${p.id}`).expect(200);
    expect(got.body).toEqual(p);
  });

  it('defaults a new product to draft, kg and the store currency', async () => {
    const res = await t.as().post('/products', { name: 'Bare' }).expect(201);
    expect(res.body).toMatchObject({
      status: 'draft',
      weightUnit: 'kg',
      currency: 'USD',
      price: 0,
      compareAtPrice: null,
      tags: [],
      images: [],
      metadata: {},
    });
  });

  it('names every bad field in a 422 and stores nothing', async () => {
    const before = (await t.as().get('/products').expect(200)).body.pagination.total;
    const res = await t
      .as()
      .post('/products', {
        price: -1,
        status: 'live',
        weightUnit: 'stone',
        tags: ['ok', 5],
        images: [{ alt: 'no url' }],
        sku: 'x'.repeat(256),
        variants: [{ price: 2 }],
      })
      .expect(422);
    expect(res.body.code).toBe('VALIDATION_ERROR');
    const fields = res.body.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(
      [
        'name',
        'price',
        'status',
        'weightUnit',
        'tags[1]',
        'images[0].url',
        'sku',
        'variants[0].title',
      ].sort(),
    );
    expect((await t.as().get('/products').expect(200)).body.pagination.total).toBe(before);
  });

  it('rejects a body that is not an object with 422', async () => {
    const res = await t.as().post('/products', [1, 2]).expect(422);
    expect(res.body.code).toBe('VALIDATION_ERROR');
  });

  it('answers 409 for a duplicate explicit slug and suffixes a derived one', async () => {
    await t.as().post('/products', { name: 'Mug', slug: 'the-mug' }).expect(201);
    const dup = await t.as().post('/products', { name: 'Other', slug: 'the-mug' }).expect(409);
    expect(dup.body.code).toBe('CONFLICT');
    expect(dup.body.details[0].field).toBe('slug');
    const a = await t.as().post('/products', { name: 'Same Name' }).expect(201);
    const b = await t.as().post('/products', { name: 'Same Name' }).expect(201);
    expect(a.body.slug).toBe('same-name');
    expect(b.body.slug).toBe('same-name-2');
    const put = await t.as().put(`/products/${b.body.id}`, { slug: 'same-name' }).expect(409);
    expect(put.body.code).toBe('CONFLICT');
  });

  it('updates only the given fields and bumps updatedAt', async () => {
    const { body: p } = await t.as().post('/products', fullProduct).expect(201);
    t.clock.advance(5);
    const { body: u } = await t
      .as()
      .put(`/products/${p.id}`, { price: 10, tags: ['new'], compareAtPrice: null })
      .expect(200);
    expect(u).toMatchObject({
      name: 'Linen Shirt',
      price: 10,
      tags: ['new'],
      compareAtPrice: null,
    });
    expect(u.updatedAt > p.updatedAt).toBe(true);
    expect((await t.as().get(`/products/${p.id}`)).body).toEqual(u);
    expect(u.createdAt).toBe(p.createdAt);
    const bad = await t.as().put(`/products/${p.id}`, { name: '' }).expect(422);
    expect(bad.body.details[0].field).toBe('name');
  });

  it('deletes with 204 and then 404s', async () => {
    const { body: p } = await t.as().post('/products', { name: 'Gone' }).expect(201);
    const del = await t.as().delete(`/products/${p.id}`).expect(204);
    expect(del.text).toBe('');
    expect((await t.as().get(`/products/${p.id}`).expect(404)).body.code).toBe('NOT_FOUND');
    expect((await t.as().delete(`/products/${p.id}`).expect(404)).body.code).toBe('NOT_FOUND');
  });

  it('404s unknown and malformed ids alike', async () => {
    for (const id of [UNKNOWN_ID, 'not-a-uuid', '1', "x' OR 1=1 --"]) {
      const res = await t
        .as()
        .get(`/products/${encodeURIComponent(id)}`)
        .expect(404);
      expect(res.body).toMatchObject({ code: 'NOT_FOUND', details: [] });
    }
    await t.as().put(`/products/nope`, { name: 'x' }).expect(404);
    // Unknown beats invalid: a bad body for a missing product is still a 404.
    await t.as().put(`/products/${UNKNOWN_ID}`, { price: 'x' }).expect(404);
    await t.as().put(`/products/${UNKNOWN_ID}/inventory`, {}).expect(404);
    await t.as().post(`/products/${UNKNOWN_ID}/variants`, {}).expect(404);
    await t.as().post(`/orders/${UNKNOWN_ID}/refund`, { amount: -1 }).expect(404);
  });

  it('never shows another store’s products', async () => {
    const { storeId: other } = createStore(t.deps, { name: 'Other' });
    const { body: mine } = await t.as().post('/products', { name: 'Mine' }).expect(201);
    await t.as({ storeId: other }).get(`/products/${mine.id}`).expect(404);
    await t.as({ storeId: other }).put(`/products/${mine.id}`, { name: 'stolen' }).expect(404);
    await t.as({ storeId: other }).delete(`/products/${mine.id}`).expect(404);
    const list = await t.as({ storeId: other }).get('/products').expect(200);
    expect(list.body.pagination.total).toBe(0);
  });
});

describe('variants', () => {
  it('creates variants with the product and adds more; stock follows the variants', async () => {
    const { body: p } = await t
      .as()
      .post('/products', {
        name: 'Tee',
        price: 20,
        variants: [
          { title: 'S', options: { size: 'S' }, inventoryQuantity: 3 },
          { title: 'M', price: 22, inventoryQuantity: 4 },
        ],
      })
      .expect(201);
    expect(p.variants.map((v: { title: string }) => v.title)).toEqual(['S', 'M']);
    expect(p.variants[0]).toMatchObject({
      productId: p.id,
      price: 20,
      position: 0,
      options: { size: 'S' },
      compareAtPrice: null,
    });
    expect(p.variants[1]).toMatchObject({ price: 22, position: 1, options: {} });
    expect(p.inventoryQuantity).toBe(7);
    const { body: v } = await t
      .as()
      .post(`/products/${p.id}/variants`, { title: 'L', sku: 'TEE-L', inventoryQuantity: 5 })
      .expect(201);
    expect(v).toMatchObject({ title: 'L', sku: 'TEE-L', position: 2, price: 20 });
    const list = await t.as().get(`/products/${p.id}/variants`).expect(200);
    expect(list.body.data.map((x: { title: string }) => x.title)).toEqual(['S', 'M', 'L']);
    expect(list.body.pagination).toEqual({ hasMore: false, nextCursor: null, total: 3 });
    const read = (await t.as().get(`/products/${p.id}`)).body;
    expect(read.inventoryQuantity).toBe(12);
    expect(read.variants).toEqual(list.body.data);
    const inList = (await t.as().get('/products?limit=250')).body.data.find(
      (x: { id: string }) => x.id === p.id,
    );
    expect(inList).toEqual(read);
  });

  it('validates a variant and 404s for an unknown product', async () => {
    const { body: p } = await t.as().post('/products', { name: 'V' }).expect(201);
    const bad = await t
      .as()
      .post(`/products/${p.id}/variants`, { price: 'free', options: { size: 3 } })
      .expect(422);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'options.size',
      'price',
      'title',
    ]);
    await t.as().post(`/products/${UNKNOWN_ID}/variants`, { title: 'x' }).expect(404);
    await t.as().get(`/products/${UNKNOWN_ID}/variants`).expect(404);
  });
});

describe('collections', () => {
  it('creates and lists collections of the store’s products', async () => {
    const { body: p } = await t.as().post('/products', { name: 'In collection' }).expect(201);
    const { body: c } = await t
      .as()
      .post('/collections', { name: 'Summer Picks', productIds: [p.id] })
      .expect(201);
    expect(c).toMatchObject({
      name: 'Summer Picks',
      slug: 'summer-picks',
      productIds: [p.id],
      productsCount: 1,
    });
    const list = await t.as().get('/collections').expect(200);
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(c.id);
    await t.as().post('/collections', { name: 'Summer Picks' }).expect(409);
    const bad = await t
      .as()
      .post('/collections', { name: 'Bad', productIds: [UNKNOWN_ID] })
      .expect(422);
    expect(bad.body.details[0].field).toBe('productIds[0]');
    await t.as().delete(`/products/${p.id}`).expect(204);
    const after = await t.as().get('/collections').expect(200);
    const again = after.body.data.find((x: { id: string }) => x.id === c.id);
    expect(again.productIds).toEqual([]);
  });
});

describe('inventory', () => {
  it('sets, increments and decrements stock; refuses negative stock unless allowed', async () => {
    const { body: p } = await t
      .as()
      .post('/products', { name: 'Stocked', inventoryQuantity: 5 })
      .expect(201);
    const path = `/products/${p.id}/inventory`;
    expect((await t.as().get(path).expect(200)).body).toMatchObject({
      productId: p.id,
      inventoryQuantity: 5,
      variants: [],
    });
    expect((await t.as().put(path, { increment: 3 }).expect(200)).body.inventoryQuantity).toBe(8);
    expect((await t.as().put(path, { decrement: 2 }).expect(200)).body.inventoryQuantity).toBe(6);
    expect((await t.as().put(path, { set: 1 }).expect(200)).body.inventoryQuantity).toBe(1);
    expect((await t.as().get(`/products/${p.id}`)).body.inventoryQuantity).toBe(1);
    const refused = await t.as().put(path, { decrement: 2 }).expect(409);
    expect(refused.body.code).toBe('INSUFFICIENT_STOCK');
    expect((await t.as().get(path)).body.inventoryQuantity).toBe(1);
    const allowed = await t.as().put(path, { decrement: 2, allowNegative: true }).expect(200);
    expect(allowed.body.inventoryQuantity).toBe(-1);
    await t.as().put(path, { set: -3 }).expect(409);
  });

  it('needs exactly one of set, increment, decrement and a variant for variant stock', async () => {
    const { body: p } = await t
      .as()
      .post('/products', {
        name: 'Var stock',
        variants: [{ title: 'A', inventoryQuantity: 2 }, { title: 'B' }],
      })
      .expect(201);
    const path = `/products/${p.id}/inventory`;
    expect((await t.as().put(path, {}).expect(422)).body.code).toBe('VALIDATION_ERROR');
    await t.as().put(path, { set: 1, increment: 1 }).expect(422);
    await t.as().put(path, { increment: 1.5 }).expect(422);
    const noVariant = await t.as().put(path, { increment: 1 }).expect(422);
    expect(noVariant.body.details[0].field).toBe('variantId');
    await t.as().put(path, { increment: 1, variantId: UNKNOWN_ID }).expect(422);
    const a = p.variants[0].id;
    const res = await t.as().put(path, { increment: 4, variantId: a }).expect(200);
    expect(res.body.variants[0]).toMatchObject({ variantId: a, inventoryQuantity: 6 });
    expect(res.body.inventoryQuantity).toBe(6);
    await t.as().get(`/products/${UNKNOWN_ID}/inventory`).expect(404);
  });
});

describe('scopes', () => {
  it('requires read_products for GET and write_products for writes, exactly', async () => {
    const { body: p } = await t.as().post('/products', { name: 'Scoped' }).expect(201);
    const writeOnly = t.as({ scopes: ['write_products'] });
    const res = await writeOnly.get('/products').expect(403);
    expect(res.body).toMatchObject({ code: 'insufficient_scope', requiredScope: 'read_products' });
    expect(res.headers['www-authenticate']).toBe(
      'Bearer error="insufficient_scope", scope="read_products"',
    );
    const readOnly = t.as({ scopes: ['read_products'] });
    await readOnly.get(`/products/${p.id}`).expect(200);
    const put = await readOnly.put(`/products/${p.id}`, { name: 'x' }).expect(403);
    expect(put.body.requiredScope).toBe('write_products');
    await readOnly.delete(`/products/${p.id}`).expect(403);
    await readOnly.post('/collections', { name: 'x' }).expect(403);
    // Inventory has its own scopes even under /products/:id.
    const inv = await readOnly.get(`/products/${p.id}/inventory`).expect(403);
    expect(inv.body.requiredScope).toBe('read_inventory');
    const invWrite = await t
      .as({ scopes: ['read_inventory'] })
      .put(`/products/${p.id}/inventory`, { set: 1 })
      .expect(403);
    expect(invWrite.body.requiredScope).toBe('write_inventory');
    // A scope failure changes nothing.
    expect((await t.as().get(`/products/${p.id}`)).body.name).toBe('Scoped');
  });
});
