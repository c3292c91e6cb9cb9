import { describe, expect, it } from 'vitest';
import { buildAuthorizeUrl } from '../../src/oauth/authorize-url.js';
import { codeChallengeS256, createCodeVerifier } from '../../src/oauth/pkce.js';
import { installationHasScopes, missingScopes } from '../../src/oauth/scopes.js';
import { createState, hashBinding, safeEqual } from '../../src/oauth/state.js';

describe('PKCE', () => {
  it('matches the RFC 7636 Appendix B vector', () => {
    expect(codeChallengeS256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('makes 43-character verifiers of the RFC 7636 alphabet, never repeating', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const v = createCodeVerifier();
      expect(v).toMatch(/^[A-Za-z0-9\-._~]{43}$/);
      seen.add(v);
    }
    expect(seen.size).toBe(200);
  });
});

describe('state', () => {
  it('is 256 bits of base64url and unique', () => {
    const a = createState();
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(a).not.toBe(createState());
  });

  it('compares equal values equal and anything else unequal, whatever the length', () => {
    const s = createState();
    expect(safeEqual(s, `${s}`)).toBe(true);
    expect(safeEqual(s, s.slice(0, -1))).toBe(false);
    expect(safeEqual(s, `${s}x`)).toBe(false);
    expect(safeEqual(s, '')).toBe(false);
  });

  it('hashes the browser binding so the database never holds it', () => {
    const b = createState();
    expect(hashBinding(b)).not.toBe(b);
    expect(hashBinding(b)).toBe(hashBinding(b));
  });
});

describe('authorize URL', () => {
  const input = {
    authorizeUrl: 'https://auth.example/oauth/authorize',
    clientId: 'app_1',
    redirectUri: 'https://app.example/auth/callback',
    scopes: ['read_products', 'read_orders'],
    state: 'st',
    codeChallenge: 'ch',
  };

  it('carries all seven parameters, scopes comma-separated', () => {
    const u = new URL(buildAuthorizeUrl(input));
    expect(Object.fromEntries(u.searchParams)).toEqual({
      client_id: 'app_1',
      redirect_uri: 'https://app.example/auth/callback',
      scope: 'read_products,read_orders',
      state: 'st',
      response_type: 'code',
      code_challenge: 'ch',
      code_challenge_method: 'S256',
    });
  });

  it('adds store_id only when given', () => {
    const storeId = '00000000-0000-4000-8000-000000000000';
    expect(new URL(buildAuthorizeUrl({ ...input, storeId })).searchParams.get('store_id')).toBe(
      storeId,
    );
    expect(
      new URL(buildAuthorizeUrl({ ...input, storeId: null })).searchParams.has('store_id'),
    ).toBe(false);
  });
});

describe('installationHasScopes', () => {
  it('is true only when every required scope was granted', () => {
    const inst = { scopes: ['read_products', 'read_orders'] };
    expect(installationHasScopes(inst, ['read_products'])).toBe(true);
    expect(installationHasScopes(inst, ['read_products', 'read_orders'])).toBe(true);
    expect(installationHasScopes(inst, ['read_products', 'write_products'])).toBe(false);
    expect(missingScopes(inst, ['write_products', 'read_orders'])).toEqual(['write_products']);
  });
});
