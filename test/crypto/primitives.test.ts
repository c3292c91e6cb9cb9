/**
 * The JavaScript SHA-256, HMAC-SHA256 and HKDF a runtime without `node:crypto`
 * (Cloudflare Workers) uses where the kit needs a digest synchronously: the
 * same bytes as Node's for every length around the block boundaries and for
 * random inputs, and the Web Crypto token cipher reading what Node's writes.
 */
import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  fromBase64,
  hkdfSha256js,
  hmacSha256js,
  sha256js,
  timingSafeEqual,
  toBase64url,
} from '../../src/crypto/primitives.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('crypto primitives without node:crypto', () => {
  it('SHA-256 equals Node’s for every length to 200 bytes and for 1 MiB', () => {
    for (let n = 0; n <= 200; n++) {
      const m = randomBytes(n);
      expect(hex(sha256js(m)), `length ${n}`).toBe(createHash('sha256').update(m).digest('hex'));
    }
    const big = randomBytes(1 << 20);
    expect(hex(sha256js(big))).toBe(createHash('sha256').update(big).digest('hex'));
  });

  it('HMAC-SHA256 equals Node’s, keys shorter and longer than a block', () => {
    for (const keyLength of [0, 1, 32, 64, 65, 200]) {
      const key = randomBytes(keyLength);
      const data = randomBytes(keyLength * 3 + 1);
      expect(hex(hmacSha256js(key, data))).toBe(
        createHmac('sha256', key).update(data).digest('hex'),
      );
    }
  });

  it('HKDF-SHA256 equals Node’s', () => {
    for (const length of [16, 32, 33, 64, 100]) {
      const [ikm, salt, info] = [randomBytes(20), randomBytes(13), randomBytes(7)];
      expect(hex(hkdfSha256js(ikm, salt, info, length))).toBe(
        Buffer.from(hkdfSync('sha256', ikm, salt, info, length)).toString('hex'),
      );
    }
  });

  it('base64 both ways as Buffer does, and a length-safe compare', () => {
    const b = randomBytes(301);
    expect(toBase64url(b)).toBe(b.toString('base64url'));
    expect(hex(fromBase64(b.toString('base64')))).toBe(b.toString('hex'));
    expect(hex(fromBase64(b.toString('base64url')))).toBe(b.toString('hex'));
    expect(timingSafeEqual(b, Uint8Array.from(b))).toBe(true);
    expect(timingSafeEqual(b, b.subarray(1))).toBe(false);
  });
});
