/**
 * The kit's crypto primitives on every runtime, importing no Node module: Node,
 * Bun and Deno get `node:crypto` through `process.getBuiltinModule` (no
 * `node:` import, so a Worker's bundle has none), Cloudflare Workers and
 * other Web runtimes get Web Crypto (`crypto.getRandomValues`,
 * `crypto.randomUUID`, `crypto.subtle` for AES-GCM) and, where the kit needs
 * a digest synchronously (key ids, HKDF at start, PKCE, webhook and cookie
 * signatures), SHA-256, HMAC and HKDF in JavaScript from @noble/hashes (audited,
 * no dependencies; checked against `node:crypto` by test/crypto/primitives.test.ts).
 */

import { hkdf } from '@noble/hashes/hkdf';
import { hmac } from '@noble/hashes/hmac';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2';

type NodeCrypto = typeof import('node:crypto');

/** `node:crypto` where the runtime has it (Node ≥ 20.16, Bun, Deno), else undefined. */
export const nodeCrypto: NodeCrypto | undefined = (() => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  try {
    return proc?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  } catch {
    return undefined;
  }
})();

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of a string. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** The string of UTF-8 bytes. */
export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** `n` random bytes from the runtime's CSPRNG. */
export function randomBytes(n: number): Uint8Array {
  return globalThis.crypto.getRandomValues(new Uint8Array(n));
}

/** A random v4 UUID. */
export function randomUUID(): string {
  return globalThis.crypto.randomUUID();
}

/** Base64 (with padding) of bytes. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/** Base64url (no padding) of bytes. */
export function toBase64url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * Bytes of base64 or base64url text (padding optional). Throws on a character
 * outside those alphabets, as `atob` does.
 */
export function fromBase64(text: string): Uint8Array {
  const all = text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
  // A lone trailing character carries no whole byte: dropped, as Node's Buffer.from(…,
  // 'base64') drops it (atob throws), so a key of the wrong length is refused by its
  // length check, naming the setting.
  const b64 = all.length % 4 === 1 ? all.slice(0, -1) : all;
  const binary = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Whether two byte strings are equal, in time that depends on their length only. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  if (nodeCrypto) return nodeCrypto.timingSafeEqual(a, b);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

const bytesOf = (data: Uint8Array | string) => (typeof data === 'string' ? utf8(data) : data);

/** SHA-256 of bytes (a string as UTF-8). */
export function sha256(data: Uint8Array | string): Uint8Array {
  if (nodeCrypto) return new Uint8Array(nodeCrypto.createHash('sha256').update(data).digest());
  return sha256js(bytesOf(data));
}

/** HMAC-SHA256 of `data` under `key` (strings as UTF-8). */
export function hmacSha256(key: Uint8Array | string, data: Uint8Array | string): Uint8Array {
  if (nodeCrypto) return new Uint8Array(nodeCrypto.createHmac('sha256', key).update(data).digest());
  return hmacSha256js(bytesOf(key), bytesOf(data));
}

/** HMAC-SHA256 in JavaScript (@noble/hashes), for runtimes without `node:crypto`. */
export function hmacSha256js(key: Uint8Array, data: Uint8Array): Uint8Array {
  return hmac(nobleSha256, key, data);
}

/** HKDF-SHA256 (RFC 5869) of `length` ≤ 8160 bytes. */
export function hkdfSha256(
  ikm: Uint8Array | string,
  salt: Uint8Array | string,
  info: Uint8Array | string,
  length: number,
): Uint8Array {
  if (nodeCrypto) {
    return new Uint8Array(
      nodeCrypto.hkdfSync('sha256', bytesOf(ikm), bytesOf(salt), bytesOf(info), length),
    );
  }
  return hkdfSha256js(bytesOf(ikm), bytesOf(salt), bytesOf(info), length);
}

/** HKDF-SHA256 in JavaScript (@noble/hashes), for runtimes without `node:crypto`. */
export function hkdfSha256js(
  ikm: Uint8Array,
  salt: Uint8Array,
  info: Uint8Array,
  length: number,
): Uint8Array {
  return hkdf(nobleSha256, ikm, salt, info, length);
}

/** The bytes of several arrays, one after the other. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** SHA-256 in JavaScript (@noble/hashes), for runtimes without `node:crypto`. */
export function sha256js(message: Uint8Array): Uint8Array {
  return nobleSha256(message);
}
