/**
 * Issue 32 item 8: an app sending another redirect URI than the one registered
 * (STORE_APP_URL=http://localhost:3000 against a registration for 127.0.0.1)
 * gets the platform's error page naming both URIs and STORE_APP_URL, the
 * setting that makes the app's URI; what was sent is escaped and cut short
 * (anyone can craft the link).
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthorizeRequestError, type Platform, startPlatform } from '../../src/platform/index.js';
import { authorizeUrl, pkce } from './helpers.js';

const REGISTERED = 'http://127.0.0.1:3000/auth/callback';
let platform: Platform;
let clientId: string;
let storeId: string;
const { challenge } = pkce();

function link(redirectUri: string | undefined): string {
  const url = new URL(
    authorizeUrl(platform, {
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'read_products',
      state: 'state-1',
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      store_id: storeId,
    }),
  );
  return url.pathname + url.search;
}

beforeAll(async () => {
  platform = await startPlatform();
  ({ clientId } = platform.registerApp({
    name: 'Mismatch',
    redirectUri: REGISTERED,
    webhookUrl: 'http://127.0.0.1:3000/webhooks',
    scopes: ['read_products'],
  }));
  storeId = platform.createStore({ name: 'Store' }).storeId;
});
afterAll(() => platform.close());

describe('GET /oauth/authorize with a redirect URI that is not registered', () => {
  it('shows the registered URI and the one sent, and names STORE_APP_URL', async () => {
    const sent = 'http://localhost:3000/auth/callback';
    const res = await request(platform.app).get(link(sent)).set('Accept', 'text/html');
    expect(res.status).toBe(400);
    expect(res.headers['location']).toBeUndefined();
    expect(res.text).toContain(`<dt>Registered for this app</dt><dd><code>${REGISTERED}</code>`);
    expect(res.text).toContain(`<dt>Sent by the app</dt><dd><code>${sent}</code>`);
    expect(res.text).toContain('STORE_APP_URL');
  });

  it('says when none was sent', async () => {
    const res = await request(platform.app).get(link(undefined));
    expect(res.status).toBe(400);
    expect(res.text).toContain('<dt>Sent by the app</dt><dd><code>(none)</code>');
  });

  it('escapes what was sent and cuts it short', async () => {
    const sent = `http://127.0.0.1:3000/"><script>alert(1)</script>${'x'.repeat(2000)}`;
    const res = await request(platform.app).get(link(sent));
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('<script>alert(1)</script>');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.text).not.toContain('x'.repeat(400));
  });

  it('approveInstall says the same', () => {
    let caught: unknown;
    try {
      platform.approveInstall({
        storeId,
        authorizeUrl: `${platform.url}${link('http://localhost:3000/auth/callback')}`,
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AuthorizeRequestError);
    expect((caught as Error).message).toContain(REGISTERED);
    expect((caught as Error).message).toContain('http://localhost:3000/auth/callback');
    expect((caught as Error).message).toContain('STORE_APP_URL');
  });
});
