/**
 * Token encryption at rest: every token (and PKCE verifier) the kit stores is
 * a compact JWE (`alg: dir`, `enc: A256GCM`) so any JOSE library can read it
 * given the key. The store id travels in the protected header (`sid`), which
 * AES-GCM authenticates, and is checked after decryption: a ciphertext copied
 * onto another store's row is refused.
 */
import { decodeProtectedHeader } from 'jose';
import { ConfigError, StoreAppError } from '../errors/index.js';
import {
  concat,
  fromBase64,
  fromUtf8,
  hkdfSha256,
  nodeCrypto,
  randomBytes,
  sha256,
  toBase64url,
  utf8,
} from './primitives.js';

export const DECRYPTION_FAILED = 'DECRYPTION_FAILED' as const;
export const UNKNOWN_KEY_ID = 'UNKNOWN_KEY_ID' as const;
export type CryptoErrorCode = typeof DECRYPTION_FAILED | typeof UNKNOWN_KEY_ID;

/** A stored value could not be decrypted. The message never holds the ciphertext. */
export class TokenDecryptionError extends StoreAppError<CryptoErrorCode> {}

export const ENCRYPTION_KEYS_SETTING = 'STORE_APP_ENCRYPTION_KEYS';
const KEYGEN_HINT = 'run `npx store-app keygen` to make one';
const KEY_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface EncryptionKey {
  /** First 8 bytes of SHA-256 of the key, base64url: names the key in the JWE header. */
  readonly kid: string;
  readonly bytes: Uint8Array;
}

/** A new key: base64url of 32 random bytes. */
/**
 * A 256-bit key of its own for one use of an app secret (HKDF-SHA256, the use
 * as `info`), so the session secret never keys two different things directly.
 */
export function deriveSubkey(secret: string, use: string): Uint8Array {
  return hkdfSha256(secret, 'store-app-kit', use, 32);
}

export function generateKey(): string {
  return toBase64url(randomBytes(KEY_BYTES));
}

/** The key id of a raw key (first 8 bytes of its SHA-256, base64url). */
export function keyId(bytes: Uint8Array): string {
  return toBase64url(sha256(bytes).subarray(0, 8));
}

/**
 * Parses `STORE_APP_ENCRYPTION_KEYS` (comma-separated, newest first) or an
 * array of keys. Messages name the position of a bad key, never its value.
 */
export function parseEncryptionKeys(
  value: string | readonly string[] | undefined,
  setting = ENCRYPTION_KEYS_SETTING,
): readonly EncryptionKey[] {
  const list = (typeof value === 'string' ? value.split(',') : (value ?? []))
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (list.length === 0) {
    throw new ConfigError(
      setting,
      `no encryption key given; set it to one or more comma-separated base64url 32-byte keys (newest first): ${KEYGEN_HINT}`,
    );
  }
  const seen = new Set<string>();
  return list.map((raw, i) => {
    const position = `key #${i + 1}`;
    const text = raw.replace(/=+$/, '');
    if (!BASE64URL.test(text)) {
      throw new ConfigError(setting, `${position} is not base64url text; ${KEYGEN_HINT}`);
    }
    const bytes = fromBase64(text);
    if (bytes.length !== KEY_BYTES) {
      throw new ConfigError(
        setting,
        `${position} decodes to ${bytes.length} bytes, expected ${KEY_BYTES}; ${KEYGEN_HINT}`,
      );
    }
    const kid = keyId(bytes);
    if (seen.has(kid)) throw new ConfigError(setting, `${position} is listed twice`);
    seen.add(kid);
    return { kid, bytes };
  });
}

export interface TokenCipher {
  /** The key id new ciphertexts carry (the first key). */
  readonly currentKid: string;
  /** Encrypts `plaintext` bound to `storeId` with the newest key. */
  encrypt(plaintext: string, storeId: string): Promise<string>;
  /** Decrypts a value written by `encrypt` for the same `storeId`. */
  decrypt(jwe: string, storeId: string): Promise<string>;
  /** True when `jwe` was not made with the newest key (rotate-keys re-encrypts it). */
  needsReencrypt(jwe: string): boolean;
}

export interface TokenCipherOptions {
  /**
   * Setting named in error messages.
   * @default 'STORE_APP_ENCRYPTION_KEYS'
   */
  setting?: string;
}

/** Builds the cipher over parsed keys (first encrypts, any decrypts). */
export function createTokenCipher(
  keys: readonly EncryptionKey[] | string | readonly string[],
  options: TokenCipherOptions = {},
): TokenCipher {
  const setting = options.setting ?? ENCRYPTION_KEYS_SETTING;
  const parsed: readonly EncryptionKey[] =
    typeof keys === 'string' || typeof keys[0] === 'string'
      ? parseEncryptionKeys(keys as string | readonly string[], setting)
      : (keys as readonly EncryptionKey[]);
  const current = parsed[0];
  if (current === undefined) {
    throw new ConfigError(setting, `no encryption key given; ${KEYGEN_HINT}`);
  }
  // Keys are imported once per key id, not per call (importing was a third of a decrypt).
  const byKid = new Map(parsed.map((k) => [k.kid, gcmKey(k.bytes)]));
  const encryptKey = byKid.get(current.kid) as GcmKey;

  function failed(why: string, cause?: unknown): TokenDecryptionError {
    return new TokenDecryptionError(DECRYPTION_FAILED, `stored value ${why}`, { cause });
  }

  return {
    currentKid: current.kid,
    async encrypt(plaintext, storeId) {
      return sealCompactJwe(plaintext, encryptKey, { kid: current.kid, sid: storeId });
    },
    async decrypt(jwe, storeId) {
      const { header, plaintext } = await openCompactJwe(jwe, (kid) => {
        const key = typeof kid === 'string' ? byKid.get(kid) : undefined;
        if (key === undefined) {
          throw new TokenDecryptionError(
            UNKNOWN_KEY_ID,
            `stored value was encrypted with a key that is not in ${setting}; ` +
              'add the previous key back (after the newest) and run `npx store-app rotate-keys`',
          );
        }
        return key;
      });
      if (header.sid !== storeId) {
        throw failed('belongs to another store (copied between rows?)');
      }
      return plaintext;
    },
    needsReencrypt(jwe) {
      try {
        return decodeProtectedHeader(jwe).kid !== current.kid;
      } catch {
        return true;
      }
    },
  };
}

const GCM_IV_BYTES = 12;
const GCM_TAG_BYTES = 16;

/**
 * An AES-256 key for GCM: Node's `KeyObject` where `node:crypto` is (sync,
 * the fast path), else a Web Crypto `CryptoKey` imported on first use.
 */
type WebKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;
interface GcmKey {
  node?: import('node:crypto').KeyObject;
  web(): Promise<WebKey>;
}

function gcmKey(bytes: Uint8Array): GcmKey {
  let web: Promise<WebKey> | undefined;
  return {
    ...(nodeCrypto ? { node: nodeCrypto.createSecretKey(bytes) } : {}),
    web() {
      web ??= globalThis.crypto.subtle.importKey('raw', bytes, 'AES-GCM', false, [
        'encrypt',
        'decrypt',
      ]);
      return web;
    },
  };
}

/** AES-256-GCM: ciphertext ‖ tag. */
async function gcmEncrypt(
  key: GcmKey,
  iv: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
): Promise<Uint8Array> {
  if (key.node && nodeCrypto) {
    const cipher = nodeCrypto.createCipheriv('aes-256-gcm', key.node, iv, {
      authTagLength: GCM_TAG_BYTES,
    });
    cipher.setAAD(aad);
    return concat(cipher.update(plaintext), cipher.final(), cipher.getAuthTag());
  }
  const sealed = await globalThis.crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: aad, tagLength: GCM_TAG_BYTES * 8 },
    await key.web(),
    plaintext,
  );
  return new Uint8Array(sealed);
}

/** AES-256-GCM open of ciphertext ‖ tag; throws when the tag does not match. */
async function gcmDecrypt(
  key: GcmKey,
  iv: Uint8Array,
  aad: Uint8Array,
  sealed: Uint8Array,
): Promise<Uint8Array> {
  const tagAt = sealed.length - GCM_TAG_BYTES;
  if (key.node && nodeCrypto) {
    const decipher = nodeCrypto.createDecipheriv('aes-256-gcm', key.node, iv, {
      authTagLength: GCM_TAG_BYTES,
    });
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.subarray(tagAt));
    return concat(decipher.update(sealed.subarray(0, tagAt)), decipher.final());
  }
  const plain = await globalThis.crypto.subtle.decrypt(
    { name: 'AES-GCM', iv, additionalData: aad, tagLength: GCM_TAG_BYTES * 8 },
    await key.web(),
    sealed,
  );
  return new Uint8Array(plain);
}

function decryptionFailed(why: string): TokenDecryptionError {
  return new TokenDecryptionError(DECRYPTION_FAILED, `stored value ${why}`);
}

/**
 * Writes a compact JWE (`alg: dir`, `enc: A256GCM`; RFC 7516 §7.1), as
 * `openCompactJwe` reads it: with Node's AES-GCM, synchronously, where the
 * runtime has `node:crypto` (jose's WebCrypto path made every token save two
 * async crypto jobs), else Web Crypto's. The output is the same standard JWE
 * (jose reads it: test/crypto/crypto.test.ts).
 */
async function sealCompactJwe(
  plaintext: string,
  key: GcmKey,
  header: { kid: string; sid: string },
): Promise<string> {
  const protectedB64 = toBase64url(utf8(JSON.stringify({ alg: 'dir', enc: 'A256GCM', ...header })));
  // A fresh random 96-bit IV per message: with one key, a repeated IV would break GCM.
  const iv = randomBytes(GCM_IV_BYTES);
  // The protected header, as written, is the additional authenticated data.
  const sealed = await gcmEncrypt(key, iv, utf8(protectedB64), utf8(plaintext));
  const tagAt = sealed.length - GCM_TAG_BYTES;
  return [
    protectedB64,
    '', // `dir`: no encrypted key
    toBase64url(iv),
    toBase64url(sealed.subarray(0, tagAt)),
    toBase64url(sealed.subarray(tagAt)),
  ].join('.');
}

/** Bytes of base64url text, or undefined when it is not base64url. */
function base64urlBytes(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    return fromBase64(text);
  } catch {
    return undefined;
  }
}

/**
 * Opens a compact JWE of exactly the kind `encrypt` writes (`alg: dir`,
 * `enc: A256GCM`, no `zip`, no `crit`; RFC 7516 §5.2), with Node's AES-GCM
 * where the runtime has it, else Web Crypto's. jose made every read an async
 * crypto job plus its general header checks, about 3/4 of a token load; the
 * format stays standard JWE, which jose itself writes and any JOSE library reads.
 */
async function openCompactJwe(
  jwe: string,
  keyFor: (kid: unknown) => GcmKey,
): Promise<{ header: Record<string, unknown>; plaintext: string }> {
  const parts = typeof jwe === 'string' ? jwe.split('.') : [];
  if (parts.length !== 5) throw decryptionFailed('is not a compact JWE');
  const [protectedB64, encryptedKey, ivB64, ciphertextB64, tagB64] = parts as [
    string,
    string,
    string,
    string,
    string,
  ];
  let header: unknown;
  try {
    header = JSON.parse(fromUtf8(base64urlBytes(protectedB64) ?? new Uint8Array()));
  } catch {
    throw decryptionFailed('is not a compact JWE');
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw decryptionFailed('is not a compact JWE');
  }
  const h = header as Record<string, unknown>;
  const key = keyFor(h.kid);
  // Pinned: anything but what encrypt writes is refused before any decryption.
  if (h.alg !== 'dir' || h.enc !== 'A256GCM' || 'zip' in h || 'crit' in h || encryptedKey !== '') {
    throw decryptionFailed('could not be decrypted (unexpected algorithm or header)');
  }
  const iv = base64urlBytes(ivB64);
  const tag = base64urlBytes(tagB64);
  const ciphertext = base64urlBytes(ciphertextB64);
  if (iv?.length !== GCM_IV_BYTES || tag?.length !== GCM_TAG_BYTES || ciphertext === undefined) {
    throw decryptionFailed('could not be decrypted (malformed iv or tag)');
  }
  try {
    // The protected header, as stored, is the additional authenticated data.
    const plaintext = await gcmDecrypt(key, iv, utf8(protectedB64), concat(ciphertext, tag));
    return { header: h, plaintext: fromUtf8(plaintext) };
  } catch {
    // A wrong key, a tampered ciphertext or header: the tag does not match.
    throw decryptionFailed('could not be decrypted (authentication failed)');
  }
}
