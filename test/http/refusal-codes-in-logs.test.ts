/**
 * Issue 32 item 10: a refusal's stable code is not a secret, so the log line
 * that reports it shows it (`errorCode`). A field named `code` is redacted
 * everywhere (it may be an authorization code); the Express shell logged the
 * launch refusal's code under that name, so it read `[redacted]`.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import express from 'express';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';
import { createFixture, type Fixture } from '../client/setup.js';

let fx: Fixture;
let kit: StoreAppKit;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  fx = await createFixture();
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  kit = await storeApp({
    appUrl: 'http://127.0.0.1:3000',
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
    logger: { instance: pino({ level: 'info' }, destination) },
  });
});
afterAll(async () => {
  await kit?.close();
  await fx?.close();
});

it('the Express shell logs a refused launch token with its code, not [redacted]', async () => {
  const { storeId } = await fx.install();
  // Signed with another secret: a forged launch.
  const forged = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(fx.platform.authUrl)
    .setAudience(fx.clientId)
    .setSubject(storeId)
    .setIssuedAt()
    .setExpirationTime('60s')
    .setJti(randomBytes(8).toString('hex'))
    .sign(randomBytes(32));
  const app = express();
  app.use(kit.middleware());
  app.get('/', kit.authenticated(), (_req, res) => {
    res.send('page');
  });
  await request(app)
    .get(`/?launch=${forged}`)
    .set({ accept: 'text/html', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'iframe' });
  const refused = logs.find((l) => l['msg'] === 'Launch token refused.');
  expect(refused, JSON.stringify(logs)).toBeDefined();
  expect(refused!['errorCode']).toMatch(/^[A-Z_]+$/);
  expect(JSON.stringify(refused)).not.toContain('[redacted]');
  expect(JSON.stringify(refused)).not.toContain(forged);
});
