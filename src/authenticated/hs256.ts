/**
 * The HS256 keys of the kit's own JWTs (app session tokens, admin launch tokens), with a
 * synchronous signature check in front of jose.
 *
 * Why: jose computes HMACs with WebCrypto. On Node 20 that costs ~60–130 µs of CPU a
 * token — a key import on every call when it is handed raw bytes, then a hop to the
 * thread pool — so a flood of forged or junk bearer tokens cost the process ~8× a
 * request with a valid one. Here a token that none of our keys signed is refused with
 * one HMAC on the calling thread (`node:crypto` where the runtime has it, else
 * @noble/hashes), and jose only sees tokens one of our keys did sign, with that key
 * alone, imported once. jose stays the authority: everything it checks (the header's
 * `alg`, the encoding, every claim) it still checks.
 */
import { fromBase64, hmacSha256, timingSafeEqual } from '../crypto/primitives.js';

/** What jose takes as an HMAC key: a WebCrypto key, or raw bytes. */
type JoseKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>> | Uint8Array;

export interface Hs256Keys {
  /**
   * Which key signed `token` (its index, newest first), or -1: not a compact JWS, or
   * signed by none of the keys. Constant-time per key; synchronous.
   */
  signer(token: string): number;
  /** Key `index` as jose takes it: a `CryptoKey` imported once where WebCrypto exists. */
  key(index: number): Promise<JoseKey>;
}

/** SHA-256's output, in bytes: any other signature length is no HS256 signature. */
const MAC_BYTES = 32;

/** The keys (raw bytes, newest first). */
export function createHs256Keys(raw: readonly Uint8Array[]): Hs256Keys {
  const imported: (Promise<JoseKey> | undefined)[] = [];
  return {
    signer(token) {
      const first = token.indexOf('.');
      const second = first < 0 ? -1 : token.indexOf('.', first + 1);
      if (second < 0 || token.indexOf('.', second + 1) >= 0) return -1;
      let signature: Uint8Array;
      try {
        signature = fromBase64(token.slice(second + 1));
      } catch {
        return -1;
      }
      if (signature.length !== MAC_BYTES) return -1;
      // The signing input is the token's first two parts, as jose encodes it (UTF-8).
      const input = token.slice(0, second);
      for (let i = 0; i < raw.length; i++) {
        if (timingSafeEqual(hmacSha256(raw[i] as Uint8Array, input), signature)) return i;
      }
      return -1;
    },
    key(index) {
      const bytes = raw[index];
      if (bytes === undefined) throw new RangeError(`No key ${index}.`);
      let key = imported[index];
      if (key === undefined) {
        key = importHmac(bytes);
        imported[index] = key;
      }
      return key;
    },
  };
}

/** The bytes as a WebCrypto HMAC-SHA-256 key, or the bytes themselves where that fails. */
async function importHmac(bytes: Uint8Array): Promise<JoseKey> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) return bytes;
  try {
    return await subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
      'verify',
    ]);
  } catch {
    // jose imports raw bytes itself on each call: slower, never wrong.
    return bytes;
  }
}
