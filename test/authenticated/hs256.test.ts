/**
 * The synchronous HS256 check in front of jose: it must name the key that signed a
 * token and refuse every token jose would refuse for its signature, and never refuse
 * one jose accepts (jose stays the authority on everything else).
 */
import { jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { SessionTokenError, tokenRefusal } from '../../src/authenticated/errors.js';
import { createHs256Keys } from '../../src/authenticated/hs256.js';

const NEW = new Uint8Array(32).fill(7);
const OLD = new Uint8Array(32).fill(9);
const OTHER = new Uint8Array(32).fill(3);

const sign = (key: Uint8Array, claims: Record<string, unknown> = { sub: 'store-1' }) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);

/** Whether jose accepts the token's signature under `key`. */
async function joseAccepts(token: string, key: Uint8Array): Promise<boolean> {
  try {
    await jwtVerify(token, key, { algorithms: ['HS256'] });
    return true;
  } catch {
    return false;
  }
}

describe('createHs256Keys', () => {
  it('names the key that signed a token, newest first (secret rotation)', async () => {
    const keys = createHs256Keys([NEW, OLD]);
    expect(keys.signer(await sign(NEW))).toBe(0);
    expect(keys.signer(await sign(OLD))).toBe(1);
    expect(keys.signer(await sign(OTHER))).toBe(-1);
  });

  it('refuses what is not a signed compact JWS', async () => {
    const keys = createHs256Keys([NEW]);
    const token = await sign(NEW);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const otherPayload = Buffer.from(JSON.stringify({ sub: 'store-2' })).toString('base64url');
    for (const bad of [
      '',
      'not-a-token',
      `${header}.${payload}`,
      `${header}.${payload}.`, // alg "none"-shaped: no signature
      `${header}.${payload}.${signature}.x`,
      `${header}.${otherPayload}.${signature}`, // another payload under a real signature
      `${header}.${payload}.${signature.slice(0, -4)}`, // a truncated signature
      `${header}.${payload}.${'A'.repeat(signature.length)}`,
      `${header}.${payload}.${signature.slice(0, -1)}*`, // outside base64url
    ]) {
      expect(keys.signer(bad), bad).toBe(-1);
    }
  });

  it('never refuses a token jose accepts, over random one-character mutations', async () => {
    const keys = createHs256Keys([NEW]);
    const token = await sign(NEW, { sub: 'store-1', n: 12345 });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ';
    let accepted = 0;
    for (let i = 0; i < 400; i++) {
      const at = (i * 7919) % token.length;
      const char = alphabet[(i * 31) % alphabet.length] as string;
      const mutated = token.slice(0, at) + char + token.slice(at + 1);
      const jose = await joseAccepts(mutated, NEW);
      if (jose) {
        accepted++;
        expect(keys.signer(mutated), mutated).toBe(0);
      }
    }
    // The unmutated token (and the mutations that left a character as it was) are accepted.
    expect(keys.signer(token)).toBe(0);
    expect(accepted).toBeGreaterThan(0);
  });

  it('hands jose a key imported once, which verifies and signs', async () => {
    const keys = createHs256Keys([NEW]);
    const first = keys.key(0);
    expect(keys.key(0)).toBe(first);
    const key = await first;
    expect(key).not.toBeInstanceOf(Uint8Array);
    const token = await new SignJWT({ sub: 'store-1' })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(key);
    expect(keys.signer(token)).toBe(0);
    expect((await jwtVerify(token, key, { algorithms: ['HS256'] })).payload.sub).toBe('store-1');
    expect(() => keys.key(1)).toThrow(RangeError);
  });
});

describe('tokenRefusal', () => {
  it('is a SessionTokenError with its code, message and status, and no stack frames', () => {
    const before = Error.stackTraceLimit;
    const err = tokenRefusal('SESSION_TOKEN_INVALID', 'The app session token is malformed.');
    expect(err).toBeInstanceOf(SessionTokenError);
    expect(err).toMatchObject({ code: 'SESSION_TOKEN_INVALID', status: 401 });
    expect(err.message).toBe('The app session token is malformed.');
    // The client's input is the cause: no frame of ours is captured (or leaked to a log).
    expect(err.stack).not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('x').stack).toMatch(/\n\s+at /);
  });
});
