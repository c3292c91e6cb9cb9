/**
 * `GET {auth.path}/browser.js`: the built browser module, served by the kit on
 * both shells (one case table), so a page without a bundler loads it as
 * `<script type="module" src>` from its own origin. Runs against the built kit
 * (dist/), which is where the module file lives.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreAppKit } from '../../src/kit.js';
import { offlineKitOptions } from '../helpers/config.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const built = join(root, 'dist', 'browser', 'index.js');

let kit: StoreAppKit;
const servers: Server[] = [];
const urls: Record<string, string> = {};

function listen(server: Server): Promise<string> {
  servers.push(server);
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () =>
      r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

beforeAll(async () => {
  const { storeApp } = (await import(join(root, 'dist', 'index.js'))) as {
    storeApp: (o: unknown) => Promise<StoreAppKit>;
  };
  kit = await storeApp(
    offlineKitOptions({ environment: 'test', session: { secret: 's'.repeat(32) } }),
  );
  const app = express();
  app.use(kit.middleware());
  urls['express'] = await listen(createServer(app));
  const hono = new Hono();
  hono.use('*', async (c, next) => (await kit.fetch(c.req.raw)) ?? next());
  urls['fetch'] = await listen(createAdaptorServer({ fetch: hono.fetch }) as Server);
});

afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  await kit?.close();
});

describe.each(['express', 'fetch'])('%s shell', (shell) => {
  it('serves the built module as JavaScript, revalidated by its ETag, with no session', async () => {
    const res = await request(urls[shell]!).get('/auth/browser.js').expect(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.text).toBe(readFileSync(built, 'utf8'));
    const etag = res.headers['etag'] as string;
    expect(etag).toMatch(/^"[\w-]{22}"$/);

    const again = await request(urls[shell]!)
      .get('/auth/browser.js')
      .set('if-none-match', etag)
      .expect(304);
    expect(again.text).toBe('');
    const stale = await request(urls[shell]!)
      .get('/auth/browser.js')
      .set('if-none-match', '"other"')
      .expect(200);
    expect(stale.text.length).toBeGreaterThan(0);
  });

  it('answers HEAD without a body', async () => {
    const res = await request(urls[shell]!).head('/auth/browser.js').expect(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.text ?? '').toBe('');
  });
});
