/**
 * Red team: a flood of forged bearer tokens. jose checks an HS256 signature with
 * WebCrypto, which on Node 20 cost ~60–130 µs of CPU a token (a key import per call,
 * then a hop to the thread pool): a client sending junk `Authorization: Bearer`
 * headers cost the app ~8× what a request with a valid token costs. A token none of
 * the app's keys signed is now refused by one synchronous HMAC before jose runs, with
 * the same 401, code and challenge; a real token still works in the same flood.
 */
import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Parity, SHELLS, startParity, XHR } from '../helpers/shell-parity.js';

let parity: Parity;
beforeAll(async () => {
  parity = await startParity();
}, 120_000);
afterAll(async () => {
  await parity?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(SHELLS)('%s', (shell) => {
  it('attack: forged and junk bearer tokens are refused before any WebCrypto work', async () => {
    const app = parity.apps[shell];
    const { storeId } = await app.install();
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ auth_time: now, sak_inst: 1 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(app.url)
      .setAudience(app.clientId)
      .setSubject(storeId)
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(new TextEncoder().encode('k'.repeat(48)));
    const [header, payload] = forged.split('.') as [string, string];
    const junk = [
      forged,
      `${header}.${payload}.`,
      `${header}.${payload}`,
      'a.b.c',
      `${'x'.repeat(200)}.${'y'.repeat(200)}.${'z'.repeat(43)}`,
    ];
    const verify = vi.spyOn(globalThis.crypto.subtle, 'verify');
    const importKey = vi.spyOn(globalThis.crypto.subtle, 'importKey');
    for (const token of junk) {
      const r = await app.send('/api/notes', {
        headers: { ...XHR, authorization: `Bearer ${token}` },
      });
      expect(r.status, token).toBe(401);
      expect(r.code, token).toBe('SESSION_TOKEN_INVALID');
      expect(r.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    }
    expect(verify).not.toHaveBeenCalled();
    expect(importKey).not.toHaveBeenCalled();

    // A real token in the same flood: verified in full (jose) once, then served.
    const { token } = await app.kit.sessionToken(storeId);
    const ok = await app.send('/api/notes', {
      headers: { ...XHR, authorization: `Bearer ${token}` },
    });
    expect(ok.status).toBe(200);
    expect(verify).toHaveBeenCalledTimes(1);
  });
});
