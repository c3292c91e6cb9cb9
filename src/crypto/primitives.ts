/**
 * The kit's crypto primitives on every runtime, importing no module: Node,
 * Bun and Deno get `node:crypto` through `process.getBuiltinModule` (no
 * `node:` import, so a Worker's bundle has none), Cloudflare Workers and
 * other Web runtimes get Web Crypto (`crypto.getRandomValues`,
 * `crypto.randomUUID`, `crypto.subtle` for AES-GCM) and, where the kit needs
 * a digest synchronously (key ids, HKDF at start, PKCE, webhook and cookie
 * signatures), SHA-256 and HMAC-SHA256 in JavaScript (FIPS 180-4, RFC 2104;
 * checked against `node:crypto` by test/crypto/primitives.test.ts).
 */

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

/** HMAC-SHA256 in JavaScript (RFC 2104), for runtimes without `node:crypto`. */
export function hmacSha256js(key: Uint8Array, data: Uint8Array): Uint8Array {
  let k = key;
  if (k.length > 64) k = sha256js(k);
  const block = new Uint8Array(64);
  block.set(k);
  const inner = new Uint8Array(64);
  const outer = new Uint8Array(64);
  for (let i = 0; i < 64; i++) {
    inner[i] = (block[i] as number) ^ 0x36;
    outer[i] = (block[i] as number) ^ 0x5c;
  }
  return sha256js(concat(outer, sha256js(concat(inner, data))));
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

/** HKDF-SHA256 in JavaScript (RFC 5869), for runtimes without `node:crypto`. */
export function hkdfSha256js(
  ikm: Uint8Array,
  salt: Uint8Array,
  info: Uint8Array,
  length: number,
): Uint8Array {
  const prk = hmacSha256js(salt, ikm);
  const out = new Uint8Array(length);
  let previous: Uint8Array = new Uint8Array(0);
  for (let i = 1, filled = 0; filled < length; i++) {
    previous = hmacSha256js(prk, concat(previous, info, Uint8Array.of(i)));
    out.set(previous.subarray(0, length - filled), filled);
    filled += previous.length;
  }
  return out;
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

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 in JavaScript (FIPS 180-4), for runtimes without `node:crypto`. */
export function sha256js(message: Uint8Array): Uint8Array {
  const bitLength = message.length * 8;
  const padded = new Uint8Array((((message.length + 8) >> 6) + 1) << 6);
  padded.set(message);
  padded[message.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLength / 0x100000000));
  view.setUint32(padded.length - 4, bitLength >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  for (let off = 0; off < padded.length; off += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(off + t * 4);
    for (let t = 16; t < 64; t++) {
      const a = w[t - 15] as number;
      const b = w[t - 2] as number;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h as unknown as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + (K[t] as number) + (w[t] as number)) >>> 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] = (h[0] as number) + a;
    h[1] = (h[1] as number) + b;
    h[2] = (h[2] as number) + c;
    h[3] = (h[3] as number) + d;
    h[4] = (h[4] as number) + e;
    h[5] = (h[5] as number) + f;
    h[6] = (h[6] as number) + g;
    h[7] = (h[7] as number) + hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(i * 4, h[i] as number);
  return out;
}
