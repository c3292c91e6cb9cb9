/**
 * The wiring in `storeApp()`: `kit.client()`, `kit.authenticated()`,
 * `kit.sessionToken()`, `GET /auth/session-token`, and the sweep stopped by
 * `kit.close()`, on the local platform.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';
import { createFixture, type Fixture } from '../client/setup.js';

let fx: Fixture;
let kit: StoreAppKit;
let dir: string;

beforeAll(async () => {
  fx = await createFixture();
  dir = mkdtempSync(join(tmpdir(), 'sak-kit-client-'));
  kit = await storeApp({
    appUrl: 'http://127.0.0.1:3000',
    environment: 'test',
    oauth: {
      clientId: fx.clientId,
      clientSecret: fx.clientSecret,
      scopes: ['read_products'],
      authUrl: fx.platform.authUrl,
    },
    // The kit's own database; installations are copied in below.
    storage: { databaseUrl: fx.databaseUrl, encryptionKeys: [fx.encryptionKey] },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: ['whsec_' + randomBytes(32).toString('base64')] },
    logger: { level: 'silent' },
  });
});
afterAll(async () => {
  await kit?.close();
  await fx?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('storeApp() wiring', () => {
  it('kit.client(storeId) talks to the platform with the stored tokens', async () => {
    const inst = await fx.install({ seed: 2 });
    const page = await kit.client(inst.storeId).products.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
  });

  it('kit.authenticated() accepts kit.sessionToken() and mints more at /auth/session-token', async () => {
    const inst = await fx.install({ seed: 1 });
    const app = express();
    app.use(kit.middleware());
    app.get('/api/count', kit.authenticated(), async (_req, res) => {
      const page = await res.locals.store.client.products.list({ limit: 1 });
      res.json({ storeId: res.locals.store.storeId, total: page.pagination.total });
    });
    const { token } = await kit.sessionToken(inst.storeId);
    const res = await request(app)
      .get('/api/count')
      .set('authorization', `Bearer ${token}`)
      .expect(200);
    expect(res.body).toEqual({ storeId: inst.storeId, total: 1 });
    const minted = await request(app)
      .get('/auth/session-token')
      .set('authorization', `Bearer ${token}`)
      .expect(200);
    expect(minted.body.token).toBeTypeOf('string');
    expect(Date.parse(minted.body.expiresAt)).toBeGreaterThan(Date.now());
  });

  it('a session token answered from memory is still refused once it expires', async () => {
    const inst = await fx.install();
    const { token, expiresAt } = await kit.sessionToken(inst.storeId);
    const app = express();
    app.use(kit.middleware());
    app.get('/page', kit.authenticated(), (_req, res) =>
      res.json({ storeId: res.locals.store.storeId, missing: res.locals.store.missingScopes }),
    );
    // The second request finds the token verified and the installation in memory.
    for (let i = 0; i < 2; i++) {
      const ok = await request(app)
        .get('/page')
        .set('authorization', `Bearer ${token}`)
        .expect(200);
      expect(ok.body).toEqual({ storeId: inst.storeId, missing: [] });
    }
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(expiresAt.getTime() + 600_000);
      const res = await request(app)
        .get('/page')
        .set('authorization', `Bearer ${token}`)
        .expect(401);
      expect(res.body.code).toBe('SESSION_TOKEN_EXPIRED');
    } finally {
      vi.useRealTimers();
    }
  });

  it('kit.purge drops the store from memory too', async () => {
    const inst = await fx.install();
    const { token } = await kit.sessionToken(inst.storeId);
    const app = express();
    app.use(kit.middleware());
    app.get('/page', kit.authenticated(), (_req, res) => res.json({ ok: true }));
    await request(app).get('/page').set('authorization', `Bearer ${token}`).expect(200);
    await kit.purge(inst.storeId);
    const res = await request(app).get('/page').set('authorization', `Bearer ${token}`).expect(401);
    expect(res.body.code).toBe('NOT_INSTALLED');
  });
});
