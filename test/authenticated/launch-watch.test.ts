/**
 * An admin launch that never reaches kit.authenticated() (a static
 * index.html served first) is noticed: the 401s the page's calls get say what
 * is wrong and how to fix it, and the developer gets one warning, instead of
 * "open the app from the store admin", which is what the merchant just did.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { type Express } from 'express';
import { SignJWT } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';
import { createFixture, type Fixture } from '../client/setup.js';

const APP_URL = 'http://127.0.0.1:3000';
const HOST = '127.0.0.1:3000';
/** The admin's iframe loading the app. */
const framed = { accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' };
const xhr = { accept: 'application/json', 'sec-fetch-mode': 'cors', host: HOST };
const EXPLAINED = /answered before kit\.authenticated\(\) read it .*express\.static/;

let fx: Fixture;
let kit: StoreAppKit;
const warnings: string[] = [];
const pub = mkdtempSync(join(tmpdir(), 'sak-static-'));

beforeAll(async () => {
  writeFileSync(join(pub, 'index.html'), '<!doctype html><title>My app</title><h1>static</h1>');
  fx = await createFixture();
  const record = (msg?: string) => (_fields: object, m?: string) => {
    if (msg === 'warn' && m) warnings.push(m);
  };
  kit = await storeApp({
    appUrl: APP_URL,
    environment: 'test',
    oauth: {
      clientId: fx.clientId,
      clientSecret: fx.clientSecret,
      scopes: ['read_products'],
      authUrl: fx.platform.authUrl,
    },
    storage: { databaseUrl: fx.databaseUrl, encryptionKeys: [fx.encryptionKey] },
    session: { secret: randomBytes(32).toString('base64url') },
    webhooks: { secrets: [`whsec_${randomBytes(32).toString('base64')}`] },
    logger: {
      level: 'warn',
      instance: { debug: record(), info: record(), warn: record('warn'), error: record() },
    },
  });
});
afterAll(async () => {
  await kit?.close();
  await fx?.close();
  rmSync(pub, { recursive: true, force: true });
});

function launchToken(storeId: string) {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(fx.platform.authUrl)
    .setAudience(fx.clientId)
    .setSubject(storeId)
    .setIssuedAt()
    .setExpirationTime('60s')
    .setJti(randomBytes(8).toString('hex'))
    .sign(new TextEncoder().encode(fx.clientSecret));
}

/** The app the way a user wrote it: `order` decides what answers `/` first. */
function appWith(order: 'kit-static-route' | 'static-kit-route' | 'kit-route-static'): Express {
  const app = express();
  const route = () => app.get('/', kit.authenticated(), (_req, res) => res.send('<h1>kit</h1>'));
  for (const part of order.split('-')) {
    if (part === 'kit') app.use(kit.middleware());
    if (part === 'static') app.use(express.static(pub));
    if (part === 'route') route();
  }
  app.get('/api/data', kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId });
  });
  return app;
}

describe('a launch that never reached kit.authenticated()', () => {
  it('kit first, static index.html before the route: the 401 explains it, one warning', async () => {
    const inst = await fx.install();
    const agent = request.agent(appWith('kit-static-route'));
    const launch = await launchToken(inst.storeId);
    const page = await agent
      .get(`/?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
      .set(framed);
    expect(page.text).toContain('static');
    const call = await agent.get('/api/data').set(xhr);
    expect(call.status).toBe(401);
    expect(call.body.code).toBe('SESSION_REQUIRED');
    expect(call.body.message).toMatch(EXPLAINED);
    expect(call.body.message).toContain('GET /');
    expect(call.body.message).not.toContain(launch);
    // A second launch of the same page: still one warning.
    await agent
      .get(`/?store_id=${inst.storeId}&embedded=1&launch=${await launchToken(inst.storeId)}`)
      .set(framed);
    const warned = warnings.filter((w) => w.includes('answered without kit.authenticated()'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).not.toContain(launch);
  });

  it('static before the kit: the page that called (Referer) had a launch token', async () => {
    const inst = await fx.install();
    const launch = await launchToken(inst.storeId);
    const app = appWith('static-kit-route');
    const page = await request(app)
      .get(`/?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
      .set(framed);
    expect(page.text).toContain('static');
    const call = await request(app)
      .get('/api/data')
      .set({ ...xhr, referer: `${APP_URL}/?store_id=${inst.storeId}&embedded=1&launch=${launch}` });
    expect(call.status).toBe(401);
    expect(call.body.message).toMatch(EXPLAINED);
    expect(call.body.message).not.toContain(launch);
  });

  it('mounted right, the launch starts a session and the calls work', async () => {
    const inst = await fx.install();
    const agent = request.agent(appWith('kit-route-static'));
    const launch = await launchToken(inst.storeId);
    const page = await agent
      .get(`/?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
      .set(framed);
    expect(page.text).toContain('kit');
    const call = await agent.get('/api/data').set(xhr).expect(200);
    expect(call.body.storeId).toBe(inst.storeId);
    // A call without any session from elsewhere keeps the plain message.
    const other = await request(appWith('kit-route-static')).get('/api/data').set(xhr);
    expect(other.status).toBe(401);
    expect(other.body.message).toBe(
      'No app session: open the app from the store admin, or send an app session token.',
    );
    // A Referer from another site naming a launch token changes nothing either.
    const forged = await request(appWith('kit-route-static'))
      .get('/api/data')
      .set({ ...xhr, referer: 'https://evil.example/?launch=x' });
    expect(forged.body.message).not.toMatch(EXPLAINED);
  });
});
