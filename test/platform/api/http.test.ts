import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApi, type TestApi } from './helpers.js';

let t: TestApi;
beforeAll(() => {
  t = createTestApi();
});
afterAll(() => t.close());

const headers = () => ({
  'x-test-store': t.storeId,
  'x-test-scopes': 'read_products,write_products',
});

describe('request bodies', () => {
  it('answers 400 INVALID_JSON for malformed JSON and creates nothing', async () => {
    const { default: supertest } = await import('supertest');
    const res = await supertest(t.app)
      .post('/api/v1/products')
      .set(headers())
      .set('content-type', 'application/json')
      .send('{"name": "x",')
      .expect(400);
    expect(res.body).toEqual({ error: expect.any(String), code: 'INVALID_JSON', details: [] });
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js/);
    expect((await t.as().get('/products')).body.pagination.total).toBe(0);
  });

  it('answers 415 for a body that is not JSON', async () => {
    const { default: supertest } = await import('supertest');
    const res = await supertest(t.app)
      .post('/api/v1/products')
      .set(headers())
      .set('content-type', 'text/plain')
      .send('name=x')
      .expect(415);
    expect(res.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const form = await supertest(t.app)
      .put('/api/v1/products/00000000-0000-4000-8000-000000000000')
      .set(headers())
      .type('form')
      .send({ name: 'x' })
      .expect(415);
    expect(form.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 413 PAYLOAD_TOO_LARGE above 1 MB and accepts just under', async () => {
    const { default: supertest } = await import('supertest');
    const big = JSON.stringify({ name: 'big', description: 'x'.repeat(1_048_600) });
    const res = await supertest(t.app)
      .post('/api/v1/products')
      .set(headers())
      .set('content-type', 'application/json')
      .send(big)
      .expect(413);
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE');
    // Under 1 MB but over the description limit: a 422, not a 413.
    const under = await t.as().post('/products', { name: 'd', description: 'x'.repeat(100_001) });
    expect(under.status).toBe(422);
    expect(under.body.details[0].field).toBe('description');
  });

  it('treats a POST without a body as an empty object (422 naming name)', async () => {
    const res = await t.as().post('/products').expect(422);
    expect(res.body.details).toEqual([{ field: 'name', message: 'is required' }]);
  });

  it('reports type errors without a 500', async () => {
    const res = await t
      .as()
      .post('/products', { name: { $gt: '' }, price: '10' })
      .expect(422);
    expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'name',
      'price',
    ]);
    await t.as().post('/products', { name: 'n', price: 1e300 }).expect(422);
    await t.as().post('/products', { name: 'n', price: 1.234 }).expect(422);
  });
});

describe('routing', () => {
  it('404s unknown endpoints with the API error body', async () => {
    const res = await t.as().get('/nope').expect(404);
    expect(res.body).toMatchObject({ code: 'NOT_FOUND', details: [] });
    await t.as().delete('/orders').expect(404);
  });

  it('answers 401 invalid_token when no guard identified the caller', async () => {
    const { default: express } = await import('express');
    const { default: supertest } = await import('supertest');
    const { createResourceRouter } = await import('../../../src/platform/api/index.js');
    const bare = express().use('/api/v1', createResourceRouter(t.deps));
    const res = await supertest(bare).get('/api/v1/products').expect(401);
    expect(res.body.code).toBe('invalid_token');
  });
});

describe('order of checks', () => {
  it('checks the scope before judging the body', async () => {
    const { default: supertest } = await import('supertest');
    const res = await supertest(t.app)
      .post('/api/v1/products')
      .set({ 'x-test-store': t.storeId, 'x-test-scopes': 'read_products' })
      .set('content-type', 'application/json')
      .send('{oops')
      .expect(403);
    expect(res.body.code).toBe('insufficient_scope');
  });

  it('maps an unexpected failure to 500 INTERNAL_ERROR without a stack', async () => {
    const broken = createTestApi();
    broken.database.sqlite.exec('DROP TABLE discounts');
    const res = await broken.as().get('/discounts').expect(500);
    expect(res.body).toEqual({
      error: 'Internal server error',
      code: 'INTERNAL_ERROR',
      details: [],
    });
    broken.close();
  });
});
