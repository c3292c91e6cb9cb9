/**
 * Bad-input sweep of the kit's network entry points over real sockets:
 * GET /auth, GET /auth/callback, POST /webhooks and routes behind
 * `kit.authenticated()` (plus GET /auth/session-token), with generated
 * query strings, headers, cookies, tokens and bodies. Properties: never a
 * 5xx, never a stored change (installations, pending states, sessions,
 * webhook deliveries, purges), never a secret in a response; forged
 * credentials never authenticate.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../src/crypto/index.js';
import { createTempMysqlDatabase } from '../helpers/mysql.js';
import { createTempDatabase, type TempDatabase } from '../helpers/postgres.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';
import {
  closeAgent,
  expectNo5xx,
  expectNoSecret,
  fcParams,
  mangled,
  nasty,
  queryString,
  type RawResponse,
  RUNS,
  SWEEP_TIMEOUT_MS,
  send,
} from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-fuzz-kit-'));
const sessionSecret = randomBytes(32).toString('base64url');
const encryptionKey = generateKey();
let h: Harness;
let guarded: Server;
let guardedUrl: string;
let secrets: string[];
let sid: string;
let binding: string;
let sessionToken: string;
let tried: Record<string, number> = {};

/** Reads the kit's tables straight from the database, to prove nothing changed. */
interface StoredState {
  snapshot(): Promise<string>;
  pendingStates(): Promise<number>;
  close(): Promise<void>;
}

const TABLES = [
  'select * from store_app_installations order by store_id',
  'select count(*) as n from store_app_claims',
  'select * from store_app_sessions order by sid',
  'select count(*) as n from store_app_webhook_deliveries',
  'select count(*) as n from store_app_purge_audit',
];
const STATES = 'select count(*) as n from store_app_claims';

function sqliteState(file: string): StoredState {
  const read = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(file, { readonly: true });
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    snapshot: async () => read((db) => JSON.stringify(TABLES.map((q) => db.prepare(q).all()))),
    pendingStates: async () => read((db) => Number((db.prepare(STATES).get() as { n: number }).n)),
    close: async () => undefined,
  };
}

async function postgresState(url: string): Promise<StoredState> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    async snapshot() {
      const out: unknown[] = [];
      for (const q of TABLES) out.push((await client.query(q)).rows);
      return JSON.stringify(out);
    },
    pendingStates: async () => Number((await client.query(STATES)).rows[0].n),
    close: () => client.end(),
  };
}

async function mysqlState(url: string): Promise<StoredState> {
  const client = await mysql.createConnection({ uri: url, dateStrings: true });
  return {
    async snapshot() {
      const out: unknown[] = [];
      for (const q of TABLES) out.push((await client.query(q))[0]);
      return JSON.stringify(out);
    },
    pendingStates: async () =>
      Number(((await client.query(STATES))[0] as Array<{ n: number }>)[0]?.n),
    close: () => client.end(),
  };
}

let stored: StoredState;
const snapshot = () => stored.snapshot();

function check(what: string, res: RawResponse): void {
  tried[what] = (tried[what] ?? 0) + 1;
  expectNo5xx(res, what);
  expectNoSecret(res, secrets);
}

async function setUp(databaseUrl: string): Promise<void> {
  tried = {};
  h = await startHarness({
    databaseUrl,
    kit: {
      session: { secret: sessionSecret },
      storage: { databaseUrl, encryptionKeys: [encryptionKey] },
    },
  });
  // A real installation and session, so there is something to steal or corrupt.
  const browser = new Browser();
  const authorizeUrl = await begin(h, browser);
  binding = browser.cookies.get('store_app_oauth')!.value;
  const cb = await browser.get(h.platform.approveInstall({ authorizeUrl, storeId: h.storeId }));
  expect(cb.status).toBe(302);
  sid = browser.cookies.get('store_app.sid')!.value;
  const installed = await h.kit.installations.get(h.storeId);
  sessionToken = (await h.kit.sessionToken(h.storeId)).token;
  secrets = [
    h.clientSecret,
    sessionSecret,
    encryptionKey,
    installed!.accessToken,
    installed!.refreshToken!,
    decodeURIComponent(sid),
    sessionToken,
  ];

  const app = express();
  app.use(h.kit.middleware());
  app.get('/api/me', h.kit.authenticated(), (_req, res) => {
    res.json({ storeId: res.locals.store.storeId });
  });
  guarded = createServer(app);
  guarded.listen(0, '127.0.0.1');
  await once(guarded, 'listening');
  guardedUrl = `http://127.0.0.1:${(guarded.address() as AddressInfo).port}`;
  // The untouched credentials do work: "never reaches the route" is meaningful.
  const ok = await send(guardedUrl, {
    path: '/api/me',
    headers: { authorization: `Bearer ${sessionToken}` },
  });
  expect(ok.status).toBe(200);
}

async function tearDown(dialect: string): Promise<void> {
  console.info(`kit bad-input sweep (${dialect}): ${JSON.stringify(tried)} (FUZZ_RUNS=${RUNS})`);
  await stored?.close();
  guarded?.closeAllConnections();
  guarded?.close();
  await h?.close();
}

let pgDb: TempDatabase | undefined;
let myDb: TempDatabase | undefined;
afterAll(async () => {
  closeAgent();
  await pgDb?.drop();
  await myDb?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const cookieHeader = () =>
  fc.oneof(
    fc.constant(''),
    nasty().map((v) => `store_app_oauth=${v}`),
    fc.constant(0).map(() => `store_app_oauth=${binding}`),
    fc
      .constant(0)
      .map(() => binding)
      .chain(mangled)
      .map((v) => `store_app_oauth=${v}`),
    fc
      .constant(0)
      .map(() => sid)
      .chain(mangled)
      .map((v) => `store_app.sid=${v}`),
    fc.tuple(nasty(), nasty()).map(([a, b]) => `store_app.sid=${a}; store_app_oauth=${b}`),
    fc.string({ maxLength: 200 }),
  );

const fetchHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    'sec-fetch-dest': fc.constantFrom('document', 'iframe', 'empty', 'frame', 'x'),
    'sec-fetch-mode': fc.constantFrom('navigate', 'cors', 'no-cors'),
    accept: fc.constantFrom('text/html', 'application/json', '*/*'),
    'x-requested-with': fc.constant('XMLHttpRequest'),
    'x-forwarded-proto': fc.constantFrom('https', 'http', 'gopher'),
    'x-forwarded-host': nasty(),
    referer: nasty(),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<Record<string, string>>;

const DIALECTS = ['sqlite', 'postgres', 'mariadb'] as const;

describe.each(DIALECTS)('kit bad-input sweep on %s', (dialect) => {
  beforeAll(async () => {
    if (dialect === 'sqlite') {
      const file = join(dir, 'fuzz.db');
      await setUp(file);
      stored = sqliteState(file);
    } else if (dialect === 'postgres') {
      pgDb = await createTempDatabase('sak_fuzz');
      await setUp(pgDb.url);
      stored = await postgresState(pgDb.url);
    } else {
      myDb = await createTempMysqlDatabase('sak_fuzz');
      await setUp(myDb.url);
      stored = await mysqlState(myDb.url);
    }
    // The snapshot sees the real installation, so "no stored change" can fail.
    expect(await snapshot()).toContain(h.storeId);
  });
  afterAll(() => tearDown(dialect));

  it(
    'GET /auth: never 5xx, no secret, nothing stored (pending installs live in the browser cookie)',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          queryString(['store_id', 'return_to', 'embedded'], nasty([h.storeId, '1'])),
          cookieHeader(),
          fetchHeaders,
          async (query, cookie, headers) => {
            const before = await snapshot();
            const res = await send(h.appUrl, {
              path: `/auth?${query}`,
              headers: { ...headers, ...(cookie ? { cookie } : {}) },
            });
            check('GET /auth', res);
            expect(await snapshot()).toBe(before);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'GET /auth/callback: never 5xx, never a stored change, no secret',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          queryString(
            ['code', 'state', 'store_id', 'error', 'error_description', 'iss'],
            nasty([h.storeId, 'access_denied', 'invalid_scope']),
          ),
          cookieHeader(),
          fetchHeaders,
          async (query, cookie, headers) => {
            const before = await snapshot();
            const res = await send(h.appUrl, {
              path: `/auth/callback?${query}`,
              headers: { ...headers, ...(cookie ? { cookie } : {}) },
            });
            check('GET /auth/callback', res);
            expect(res.status).not.toBe(200);
            expect(await snapshot()).toBe(before);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'POST /webhooks with forged deliveries: always 4xx, nothing recorded or purged, no secret',
    async () => {
      const now = () => String(Math.floor(Date.now() / 1000));
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT'),
          fc.oneof(
            fc.string({ maxLength: 500 }),
            fc.constant(0).map(() =>
              JSON.stringify({
                type: 'app.uninstalled',
                timestamp: new Date().toISOString(),
                data: { store_id: h.storeId, client_id: h.clientId },
              }),
            ),
            fc.json({ maxDepth: 3 }),
            fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
          ),
          fc.record(
            {
              'content-type': fc.oneof(
                fc.constantFrom(
                  'application/json',
                  'application/json; charset=utf-8',
                  'text/plain',
                ),
                nasty(),
              ),
              'webhook-id': fc.oneof(fc.constant('msg_1'), nasty()),
              'webhook-timestamp': fc.oneof(fc.constant(0).map(now), nasty()),
              'webhook-signature': fc.oneof(
                fc
                  .uint8Array({ minLength: 32, maxLength: 32 })
                  .map((b) => `v1,${Buffer.from(b).toString('base64')}`),
                nasty().map((s) => `v1,${s}`),
                nasty(),
              ),
            },
            { requiredKeys: [] },
          ),
          async (method, body, headers) => {
            const before = await snapshot();
            const res = await send(h.appUrl, { method, path: '/webhooks', headers, body });
            check('/webhooks', res);
            expect(res.status).toBeGreaterThanOrEqual(400);
            expect(await snapshot()).toBe(before);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );

  it(
    'authenticated routes with forged cookies, session and launch tokens: never reach the route, never 5xx, no change',
    async () => {
      const forgedJwt = fc
        .record({
          sub: fc.oneof(fc.constant(h.storeId), nasty()),
          key: fc.oneof(fc.constant(`${h.clientSecret}x`), fc.constant(sessionSecret), nasty()),
          exp: fc.integer({ min: -86_400, max: 86_400 }),
        })
        .map(async ({ sub, key, exp }) => {
          const now = Math.floor(Date.now() / 1000);
          return new SignJWT({})
            .setProtectedHeader({ alg: 'HS256' })
            .setSubject(sub)
            .setIssuer(h.platform.authUrl)
            .setAudience(h.clientId)
            .setIssuedAt(now)
            .setExpirationTime(now + exp)
            .sign(new TextEncoder().encode(key.length > 0 ? key : 'k'));
        });
      const unsigned = fc.constant(
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(`{"sub":"x"}`).toString('base64url')}.`,
      );
      const token = fc.oneof(
        fc
          .constant(0)
          .map(() => sessionToken)
          .chain(mangled)
          .map((t) => Promise.resolve(t)),
        forgedJwt,
        unsigned.map((t) => Promise.resolve(t)),
        nasty().map((t) => Promise.resolve(t)),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('/api/me', '/auth/session-token'),
          fc.option(token, { nil: undefined }),
          fc.option(token, { nil: undefined }),
          cookieHeader(),
          fc.option(nasty([h.storeId]), { nil: undefined }),
          fetchHeaders,
          async (path, bearer, launch, cookie, storeId, headers) => {
            const query = new URLSearchParams();
            if (launch) query.set('launch', await launch);
            if (storeId !== undefined) query.set('store_id', storeId);
            const auth: Record<string, string> = bearer
              ? { authorization: `Bearer ${await bearer}` }
              : {};
            const before = await snapshot();
            const res = await send(guardedUrl, {
              path: `${path}?${query.toString()}`,
              headers: { ...headers, ...auth, ...(cookie ? { cookie } : {}) },
            });
            check('authenticated', res);
            // A 200 page is allowed (the iframe break-out towards /auth); the route's JSON is not.
            const reached =
              res.status === 200 &&
              String(res.headers['content-type']).startsWith('application/json');
            expect(reached, `forged credentials reached ${path}`).toBe(false);
            expect(await snapshot()).toBe(before);
          },
        ),
        fcParams(),
      );
    },
    SWEEP_TIMEOUT_MS,
  );
});
