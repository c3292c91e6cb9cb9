/**
 * Verified app session tokens are remembered under the tail of their signature (a
 * number read from its last five characters: a look-up per request hashes neither the
 * whole token nor a slice of it). The key is only a locator: a token that carries a remembered token's signature (so its key) with
 * another payload is no hit, and its full verification refuses it.
 */
import { describe, expect, it } from 'vitest';
import { createSessionTokens, SessionTokenError } from '../../src/authenticated/index.js';

const STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
const VICTIM = '0b6f7a11-2c3d-4e5f-8a9b-1c2d3e4f5a6b';

function issuer() {
  return createSessionTokens({
    secrets: ['s'.repeat(32)],
    clientId: 'app',
    issuer: 'https://app.example',
    ttlSeconds: 300,
    clockToleranceSeconds: 0,
  });
}

describe('remembered session tokens', () => {
  it("attack: another store's payload under a remembered token's signature is verified in full and refused", async () => {
    const tokens = issuer();
    const { token } = await tokens.mint(STORE, { installedAt: 1_700_000_000_000 });
    // Remembered after its first verification.
    expect((await tokens.verifySession(token)).storeId).toBe(STORE);
    expect(tokens.rememberedSession?.(token)?.session.storeId).toBe(STORE);

    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: VICTIM })).toString('base64url')}.${signature}`;
    // Same signature, so the same key: still no hit for the forged token.
    expect(forged.slice(-5)).toBe(token.slice(-5));
    expect(tokens.rememberedSession?.(forged)?.session).toBeUndefined();
    await expect(tokens.verifySession(forged)).rejects.toBeInstanceOf(SessionTokenError);
    // The refusal left the real token remembered.
    expect(tokens.rememberedSession?.(token)?.session.storeId).toBe(STORE);
  });

  it('two remembered tokens of a store are each answered with their own session', async () => {
    const tokens = issuer();
    const a = (await tokens.mint(STORE, { installedAt: 1 })).token;
    const b = (await tokens.mint(VICTIM, { installedAt: 2 })).token;
    await tokens.verifySession(a);
    await tokens.verifySession(b);
    expect(tokens.rememberedSession?.(a)?.session).toMatchObject({
      storeId: STORE,
      installedAt: 1,
    });
    expect(tokens.rememberedSession?.(b)?.session).toMatchObject({
      storeId: VICTIM,
      installedAt: 2,
    });
  });
});
