import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PLATFORM_APP_EXISTS,
  PLATFORM_INVALID_APP,
  PLATFORM_INVALID_OPTIONS,
  type Platform,
  startPlatform,
} from '../../src/platform/index.js';

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(async () => {
  await platform.close();
});

const base = {
  name: 'Reg',
  redirectUri: 'https://reg.example/auth/callback',
  webhookUrl: 'https://reg.example/webhooks',
  scopes: ['read_products'],
};

describe('registerApp', () => {
  it('issues app_ client ids, 32-byte secrets and whsec_ webhook secrets', () => {
    const app = platform.registerApp(base);
    expect(app.appId).toMatch(/^[0-9a-f-]{36}$/);
    expect(app.clientId).toMatch(/^app_[A-Za-z0-9_-]+$/);
    expect(Buffer.from(app.clientSecret, 'base64url')).toHaveLength(32);
    expect(app.webhookSecret).toMatch(/^whsec_/);
    expect(Buffer.from(app.webhookSecret.slice(6), 'base64')).toHaveLength(32);
  });

  it('accepts http only on loopback hosts', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '[::1]']) {
      expect(() =>
        platform.registerApp({
          ...base,
          redirectUri: `http://${host}:3000/cb`,
          webhookUrl: `http://${host}:3000/wh`,
        }),
      ).not.toThrow();
    }
    for (const url of [
      'http://example.com/cb',
      'http://10.0.0.1/cb',
      'ftp://x/cb',
      'not a url',
      'https://u:p@x.example/cb',
    ]) {
      expect(() => platform.registerApp({ ...base, redirectUri: url })).toThrow(
        expect.objectContaining({ code: PLATFORM_INVALID_APP }),
      );
      expect(() => platform.registerApp({ ...base, webhookUrl: url })).toThrow(
        expect.objectContaining({ code: PLATFORM_INVALID_APP }),
      );
    }
  });

  it('accepts only scopes of the Scopes table', () => {
    for (const scopes of [[], ['read_everything'], ['read_products', 'admin']]) {
      expect(() => platform.registerApp({ ...base, scopes })).toThrow(
        expect.objectContaining({ code: PLATFORM_INVALID_APP }),
      );
    }
    expect(() =>
      platform.registerApp({ ...base, scopes: 'read_products,manage_checkouts' }),
    ).not.toThrow();
  });

  it('takes fixed credentials (so an app .env can match) and refuses a taken client id', () => {
    const fixed = {
      clientId: 'app_fixed_one',
      clientSecret: 'a-fixed-client-secret-of-length',
      webhookSecret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    };
    const app = platform.registerApp({ ...base, ...fixed });
    expect(app).toMatchObject(fixed);
    expect(() => platform.registerApp({ ...base, clientId: 'app_fixed_one' })).toThrow(
      expect.objectContaining({ code: PLATFORM_APP_EXISTS }),
    );
    expect(() => platform.registerApp({ ...base, webhookSecret: 'nope' })).toThrow(
      expect.objectContaining({ code: PLATFORM_INVALID_APP }),
    );
    expect(() => platform.registerApp({ ...base, tier: 'gold' as 'elite' })).toThrow(
      expect.objectContaining({ code: PLATFORM_INVALID_APP }),
    );
    expect(() => platform.registerApp({ ...base, rateLimit: { perMinute: 0 } })).toThrow(
      expect.objectContaining({ code: PLATFORM_INVALID_APP }),
    );
  });
});

describe('registerApp again with the same client id (a persisted platform restarting)', () => {
  const creds = {
    clientId: 'app_again',
    clientSecret: 'the-same-client-secret-0123456789',
    webhookSecret: `whsec_${Buffer.alloc(32, 9).toString('base64')}`,
  };

  it('keeps the app (same appId) and takes the new settings when the secret matches', () => {
    const first = platform.registerApp({ ...base, ...creds });
    const again = platform.registerApp({
      ...base,
      ...creds,
      name: 'Renamed',
      redirectUri: 'http://127.0.0.1:4999/auth/callback',
      webhookUrl: 'http://127.0.0.1:4999/webhooks',
      scopes: 'read_products,read_orders',
    });
    expect(again).toEqual(first);
    // The authorize endpoint now accepts the new redirect URI and scopes.
    const store = platform.createStore();
    const authorizeUrl = `${platform.authUrl}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: creds.clientId,
      redirect_uri: 'http://127.0.0.1:4999/auth/callback',
      scope: 'read_products,read_orders',
      state: 'state-0123456789',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    })}`;
    expect(platform.approveInstall({ authorizeUrl, storeId: store.storeId })).toMatch(
      /^http:\/\/127\.0\.0\.1:4999\/auth\/callback\?/,
    );
  });

  it('keeps the webhook secret when the new registration does not name one', () => {
    const { webhookSecret: _w, ...withoutWebhook } = creds;
    expect(platform.registerApp({ ...base, ...withoutWebhook }).webhookSecret).toBe(
      creds.webhookSecret,
    );
  });

  it('refuses another secret, or none, with PLATFORM_APP_EXISTS naming the fix and no secret', () => {
    for (const clientSecret of ['another-client-secret-0123456789', undefined]) {
      let caught: unknown;
      try {
        platform.registerApp({ ...base, clientId: creds.clientId, clientSecret });
      } catch (err) {
        caught = err;
      }
      expect(caught).toMatchObject({ code: PLATFORM_APP_EXISTS, status: 409 });
      const message = (caught as Error).message;
      expect(message).toContain('same clientSecret');
      expect(message).not.toContain(creds.clientSecret);
      if (clientSecret) expect(message).not.toContain(clientSecret);
    }
    // Nothing changed: the original secret still registers.
    expect(platform.registerApp({ ...base, ...creds }).clientSecret).toBe(creds.clientSecret);
  });
});

describe('startPlatform options', () => {
  it('rejects invalid options with PLATFORM_INVALID_OPTIONS', async () => {
    await expect(startPlatform({ port: -1 })).rejects.toMatchObject({
      code: PLATFORM_INVALID_OPTIONS,
    });
    await expect(startPlatform({ accessTokenTtlSeconds: 0 })).rejects.toMatchObject({
      code: PLATFORM_INVALID_OPTIONS,
    });
    await expect(startPlatform({ webhookRetrySchedule: [-1] })).rejects.toMatchObject({
      code: PLATFORM_INVALID_OPTIONS,
    });
    await expect(startPlatform({ rateLimit: { concurrent: 0 } })).rejects.toMatchObject({
      code: PLATFORM_INVALID_OPTIONS,
    });
  });

  it('honours accessTokenTtlSeconds', async () => {
    const p = await startPlatform({ accessTokenTtlSeconds: 120 });
    try {
      const { install } = await import('./helpers.js');
      const inst = await install(p);
      const session = await fetch(`${p.authUrl}/oauth/session`, {
        headers: { authorization: `Bearer ${inst.accessToken}` },
      });
      const { expires_at } = (await session.json()) as { expires_at: string };
      expect(Date.parse(expires_at) - Date.now()).toBeLessThanOrEqual(121_000);
      p.advanceClock(120);
      const after = await fetch(`${p.authUrl}/oauth/session`, {
        headers: { authorization: `Bearer ${inst.accessToken}` },
      });
      expect(((await after.json()) as { code: string }).code).toBe('token_expired');
    } finally {
      await p.close();
    }
  });
});
