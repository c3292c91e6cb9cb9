/**
 * A launch link works once across every instance of the app on one database:
 * the second instance refuses the token the first accepted (SQLite file and
 * Postgres), and a database failure during the claim is a 503, not a refusal.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import express from 'express';
import { SignJWT } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLaunchVerifier } from '../../src/authenticated/session-token.js';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';
import { createFixture, type Fixture } from '../client/setup.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';

/** The admin's iframe loading the app (launch tokens are only honoured framed). */
const navigate = {
  accept: 'text/html',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'iframe',
};
const xhr = { accept: 'application/json', 'sec-fetch-mode': 'cors' };

function kitOn(fx: Fixture, sessionSecret: string): Promise<StoreAppKit> {
  return storeApp({
    appUrl: 'http://127.0.0.1:3000',
    environment: 'test',
    oauth: {
      clientId: fx.clientId,
      clientSecret: fx.clientSecret,
      scopes: ['read_products'],
      authUrl: fx.platform.authUrl,
    },
    storage: { databaseUrl: fx.databaseUrl, encryptionKeys: [fx.encryptionKey] },
    session: { secret: sessionSecret },
    webhooks: { secrets: [`whsec_${randomBytes(32).toString('base64')}`] },
    logger: { level: 'silent' },
  });
}

function appOf(kit: StoreAppKit) {
  const app = express();
  app.use(kit.middleware());
  app.get('/page', kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId });
  });
  return app;
}

function launchToken(fx: Fixture, storeId: string) {
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

/** `databaseUrl` undefined: the fixture's own SQLite file in a temp folder. */
function defineReplaySuite(label: string, databaseUrl: () => Promise<string | undefined>) {
  describe(`launch token replay across instances (${label})`, () => {
    let fx: Fixture;
    let first: StoreAppKit;
    let second: StoreAppKit;

    beforeAll(async () => {
      const url = await databaseUrl();
      fx = await createFixture(url === undefined ? {} : { databaseUrl: url });
      const secret = randomBytes(32).toString('base64url');
      first = await kitOn(fx, secret);
      second = await kitOn(fx, secret);
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
      await fx?.close();
    });

    it('the launch JWT accepted by one instance is refused by the other', async () => {
      const inst = await fx.install();
      const launch = await launchToken(fx, inst.storeId);
      const url = `/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`;
      const ok = await request(appOf(first)).get(url).set(navigate).expect(200);
      expect(ok.body.storeId).toBe(inst.storeId);
      const replay = await request(appOf(second)).get(url).set(xhr);
      expect(replay.status).toBe(401);
      expect(replay.body.storeId).toBeUndefined();
    });

    it('a fresh launch token still works on the second instance', async () => {
      const inst = await fx.install();
      const launch = await launchToken(fx, inst.storeId);
      const res = await request(appOf(second))
        .get(`/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
        .set(navigate)
        .expect(200);
      expect(res.body.storeId).toBe(inst.storeId);
    });

    // Last in the suite: it breaks the claims table.
    it('a database failure while claiming answers 503 STORAGE_UNAVAILABLE, not "token refused"', async () => {
      const inst = await fx.install();
      const drop = sql.raw('DROP TABLE store_app_claims');
      if (fx.storage.dialect === 'sqlite') fx.storage.db.run(drop);
      else await fx.storage.db.execute(drop);
      const launch = await launchToken(fx, inst.storeId);
      const res = await request(appOf(first))
        .get(`/page?store_id=${inst.storeId}&embedded=1&launch=${launch}`)
        .set(xhr);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('STORAGE_UNAVAILABLE');
      expect(JSON.stringify(res.body)).not.toContain(launch);
    });
  });
}

defineReplaySuite('SQLite file', async () => undefined);

let database: TempDatabase | undefined;
afterAll(async () => {
  await database?.drop();
});
defineReplaySuite('Postgres', async () => {
  database = await createTempDatabase('sak_launch');
  return database.url;
});

describe('launch verifier claim', () => {
  const config = {
    clientSecret: 'launch-secret-for-tests-0123456789',
    clientId: 'client-1',
    issuer: 'http://platform.test',
    clockToleranceSeconds: 5,
  };
  const token = () =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(config.issuer)
      .setAudience(config.clientId)
      .setSubject('store-1')
      .setIssuedAt()
      .setExpirationTime('60s')
      .setJti(randomBytes(8).toString('hex'))
      .sign(new TextEncoder().encode(config.clientSecret));

  it('a driver failure in the claim is STORAGE_UNAVAILABLE (503), and the token stays usable', async () => {
    let fail = true;
    const claimed: Date[] = [];
    const verifier = createLaunchVerifier({
      ...config,
      claim: async (_jti, expiresAt) => {
        if (fail) throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
        claimed.push(expiresAt);
        return true;
      },
    });
    const jwt = await token();
    await expect(verifier.verify(jwt)).rejects.toMatchObject({
      code: 'STORAGE_UNAVAILABLE',
      status: 503,
    });
    fail = false;
    await expect(verifier.verify(jwt)).resolves.toBe('store-1');
    // Claimed for the token's life (60 s + tolerance), not longer.
    const ms = (claimed[0]?.getTime() ?? 0) - Date.now();
    expect(ms).toBeGreaterThan(55_000);
    expect(ms).toBeLessThanOrEqual(66_000);
    await expect(verifier.verify(jwt)).rejects.toMatchObject({ code: 'LAUNCH_TOKEN_INVALID' });
  });

  it('a claim refused by the database is LAUNCH_TOKEN_INVALID', async () => {
    const verifier = createLaunchVerifier({ ...config, claim: async () => false });
    await expect(verifier.verify(await token())).rejects.toMatchObject({
      code: 'LAUNCH_TOKEN_INVALID',
    });
  });
});
