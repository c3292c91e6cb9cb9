import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppRegistry } from '../../src/platform/apps.js';
import { queryMap, validateAuthorizeRequest } from '../../src/platform/auth/authorize.js';
import { openPlatformDb } from '../../src/platform/db/open.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { pkce, REDIRECT } from './helpers.js';

const NAMES = [
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'store_id',
  'extra',
];

describe('authorize validation under arbitrary input', () => {
  it('never throws and only ever redirects to the registered redirect_uri', () => {
    const database = openPlatformDb();
    try {
      const apps = createAppRegistry(database.db);
      const app = apps.register({
        name: 'fuzz',
        redirectUri: REDIRECT,
        webhookUrl: 'https://hooks.example/w',
        scopes: ['read_products'],
      });
      const valid: Record<string, string> = {
        client_id: app.clientId,
        redirect_uri: REDIRECT,
        scope: 'read_products',
        state: 's',
        response_type: 'code',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      };
      const value = fc.oneof(
        fc.string(),
        fc.constantFrom(...Object.values(valid), 'https://evil.example/cb'),
      );
      fc.assert(
        fc.property(
          fc.array(fc.tuple(fc.constantFrom(...NAMES), value), { maxLength: 12 }),
          fc.boolean(),
          (pairs, base) => {
            const search = new URLSearchParams(base ? valid : {});
            for (const [k, v] of pairs) search.append(k, v);
            const result = validateAuthorizeRequest(queryMap(search), {
              apps,
              storeExists: () => false,
            });
            if (!result.ok && result.kind === 'redirect') {
              const url = new URL(result.redirectUrl);
              expect(url.origin + url.pathname).toBe(REDIRECT);
            }
            if (result.ok) expect(result.request.redirectUri).toBe(REDIRECT);
          },
        ),
        { numRuns: 500 },
      );
    } finally {
      database.close();
    }
  });
});

describe('HTTP endpoints under arbitrary input', () => {
  let platform: Platform;
  beforeAll(async () => {
    platform = await startPlatform();
  });
  afterAll(async () => {
    await platform.close();
  });

  it('the token endpoint answers 400 or 401 with an RFC 6749 body, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            'grant_type',
            'client_id',
            'client_secret',
            'code',
            'refresh_token',
            'code_verifier',
            'x',
          ),
          fc.oneof(
            fc.string(),
            fc.integer(),
            fc.constant(null),
            fc.array(fc.string(), { maxLength: 2 }),
          ),
        ),
        async (body) => {
          const res = await request(platform.app).post('/oauth/token').send(body);
          expect([400, 401]).toContain(res.status);
          expect(typeof res.body.error).toBe('string');
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the API guard answers 4xx with the API error body for arbitrary credentials', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), async (auth, store) => {
        const req = request(platform.app).get('/api/v1/products');
        // Header values must be legal HTTP; drop what Node would refuse to send.
        const legal = (s: string) => /^[\x20-\x7e]*$/.test(s);
        if (legal(auth)) req.set('Authorization', auth);
        if (legal(store)) req.set('X-Store-Id', store);
        const res = await req;
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ code: 'invalid_token', details: [] });
        expect(res.headers['x-ratelimit-limit']).toBeDefined();
      }),
      { numRuns: 40 },
    );
  });
});
