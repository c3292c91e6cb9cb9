/**
 * The standalone client (`store-app-kit/client`) and `client.session()`, over
 * real sockets against the local platform: a token in hand is enough, errors
 * are the kit's typed errors, a `getToken` callback is asked again when the
 * platform rejects its token as expired.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createStoreClient,
  TokenExpiredError,
  TokenRevokedError,
} from '../../src/client/public.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { ALL_SCOPES } from '../platform/api/helpers.js';
import { type Installed, install, postToken } from '../platform/helpers.js';

let platform: Platform;
let app: Installed;

beforeAll(async () => {
  platform = await startPlatform({ logger: false, accessTokenTtlSeconds: 600 });
  const { storeId } = platform.createStore({ name: 'Standalone', seed: 5 });
  app = await install(platform, { scopes: ALL_SCOPES, storeId });
});
afterAll(() => platform?.close());

describe('createStoreClient', () => {
  it('calls the platform with only an access token, typed records back', async () => {
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: app.storeId,
      accessToken: app.accessToken,
    });
    const page = await client.products.list({ limit: 2, sort: 'price', order: 'asc' });
    expect(page.data).toHaveLength(2);
    expect(page.data[0]!.price).toBeLessThanOrEqual(page.data[1]!.price);
    const customer = await client.customers.create({
      email: 'solo@example.com',
      firstName: 'Solo',
    });
    expect(customer.firstName).toBe('Solo');
    expect(customer.ordersCount).toBe(0);
    const store = await client.store.current();
    expect(store.id).toBe(app.storeId);
  });

  it('behaves as a plain object: every resource listed, the same object each read, and replaceable in tests', async () => {
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: app.storeId,
      accessToken: app.accessToken,
    });
    // Apps spread, list and stub the client in their tests: it stays a plain object.
    expect(Object.keys(client)).toEqual(
      expect.arrayContaining(['storeId', 'products', 'orders', 'customers', 'inventory', 'store']),
    );
    const products = client.products;
    expect(client.products).toBe(products);
    expect({ ...client }.orders).toBe(client.orders);
    // A test double for one method, then for a whole resource.
    const real = client.products.list;
    client.products.list = Object.assign(async () => ({ data: [], pagination: {} }), {
      listAll: real.listAll,
    }) as unknown as typeof real;
    expect((await client.products.list()).data).toEqual([]);
    const fake = { current: async () => ({ id: 'fake' }) } as unknown as typeof client.store;
    const other = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: app.storeId,
      accessToken: app.accessToken,
    });
    other.store = fake;
    expect(other.store).toBe(fake);
    expect((await other.store.current()).id).toBe('fake');
    expect((await other.products.list({ limit: 1 })).data).toHaveLength(1);
  });

  it('session() answers what the token grants, in the platform clock', async () => {
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: app.storeId,
      accessToken: app.accessToken,
    });
    const session = await client.session();
    expect(session.store_id).toBe(app.storeId);
    expect(session.app_id).toBe(app.appId);
    expect([...session.scopes].sort()).toEqual([...ALL_SCOPES].sort());
    expect(Date.parse(session.expires_at)).toBeGreaterThan(Date.now());
  });

  it('a revoked token is TokenRevokedError, from the API and the session check', async () => {
    const other = await install(platform, { scopes: ['read_products'] });
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: other.storeId,
      accessToken: other.accessToken,
    });
    expect((await client.session()).scopes).toEqual(['read_products']);
    platform.revokeTokens({ storeId: other.storeId, clientId: other.clientId });
    await expect(client.products.list()).rejects.toBeInstanceOf(TokenRevokedError);
    await expect(client.session()).rejects.toBeInstanceOf(TokenRevokedError);
  });

  it('asks getToken again when the platform says the token expired, then replays', async () => {
    const { storeId } = platform.createStore({ name: 'Refreshing', seed: 3 });
    const other = await install(platform, { scopes: ['read_products'], storeId });
    let current = other.accessToken;
    const asked: Array<string | undefined> = [];
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: other.storeId,
      getToken: async ({ rejected }) => {
        asked.push(rejected);
        if (rejected) {
          const res = await postToken(platform, {
            grant_type: 'refresh_token',
            client_id: other.clientId,
            client_secret: other.clientSecret,
            refresh_token: other.refreshToken,
          });
          current = String(res.body['access_token']);
        }
        return current;
      },
    });
    await client.products.list({ limit: 1 });
    platform.advanceClock(601);
    const page = await client.products.list({ limit: 1 });
    expect(page.data).toHaveLength(1);
    // First call; second call, rejected as expired, asked with the rejected token, replayed.
    expect(asked).toEqual([undefined, undefined, other.accessToken, undefined]);
  });

  it('a static token that expired is TokenExpiredError', async () => {
    const other = await install(platform, { scopes: ['read_products'] });
    const client = createStoreClient({
      apiUrl: platform.apiUrl,
      storeId: other.storeId,
      accessToken: other.accessToken,
    });
    platform.advanceClock(601);
    await expect(client.products.list()).rejects.toBeInstanceOf(TokenExpiredError);
  });

  it('refuses bad options at once, naming the option', () => {
    const base = { apiUrl: 'http://127.0.0.1:9/api/v1', storeId: 's' };
    // @ts-expect-error neither accessToken nor getToken
    expect(() => createStoreClient(base)).toThrow(ConfigError);
    expect(() =>
      // @ts-expect-error both
      createStoreClient({ ...base, accessToken: 't', getToken: () => 't' }),
    ).toThrow(/exactly one of accessToken/);
    expect(() => createStoreClient({ ...base, apiUrl: 'not a url', accessToken: 't' })).toThrow(
      /createStoreClient\.baseUrl|apiUrl|absolute URL/,
    );
    // @ts-expect-error misspelt option
    expect(() => createStoreClient({ ...base, accessToken: 't', timeoutMS: 5 })).toThrow(
      /timeoutMS/,
    );
  });
});
