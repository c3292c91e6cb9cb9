/**
 * Token encryption at rest: every token (and PKCE verifier) the kit stores is
 * a compact JWE (`alg: dir`, `enc: A256GCM`) so any JOSE library can read it
 * given the key. The store id travels in the protected header (`sid`), which
 * AES-GCM authenticates, and is checked after decryption: a ciphertext copied
 * onto another store's row is refused.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import { ConfigError, StoreAppError } from '../errors/index.js';

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
export function deriveSubkey(secret: string, use: string): KeyObject {
  const bytes = hkdfSync(
    'sha256',
    Buffer.from(secret, 'utf8'),
    Buffer.from('store-app-kit'),
    Buffer.from(use),
    32,
  );
  return createSecretKey(Buffer.from(bytes));
}

export function generateKey(): string {
  return randomBytes(KEY_BYTES).toString('base64url');
}

/** The key id of a raw key (first 8 bytes of its SHA-256, base64url). */
export function keyId(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest().subarray(0, 8).toString('base64url');
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
    const bytes = new Uint8Array(Buffer.from(text, 'base64url'));
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
  const byKid = new Map(parsed.map((k) => [k.kid, createSecretKey(k.bytes)]));
  const encryptKey = byKid.get(current.kid) as KeyObject;

  function failed(why: string, cause?: unknown): TokenDecryptionError {
    return new TokenDecryptionError(DECRYPTION_FAILED, `stored value ${why}`, { cause });
  }

  return {
    currentKid: current.kid,
    async encrypt(plaintext, storeId) {
      return sealCompactJwe(plaintext, encryptKey, { kid: current.kid, sid: storeId });
    },
    async decrypt(jwe, storeId) {
      const { header, plaintext } = openCompactJwe(jwe, (kid) => {
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

function decryptionFailed(why: string): TokenDecryptionError {
  return new TokenDecryptionError(DECRYPTION_FAILED, `stored value ${why}`);
}

/**
 * Writes a compact JWE (`alg: dir`, `enc: A256GCM`; RFC 7516 §7.1) with
 * Node's AES-GCM, synchronously, as `openCompactJwe` reads it. jose's
 * WebCrypto path made every token save two async crypto jobs; the output is
 * the same standard JWE (jose reads it: test/crypto/crypto.test.ts).
 */
function sealCompactJwe(
  plaintext: string,
  key: KeyObject,
  header: { kid: string; sid: string },
): string {
  const protectedB64 = Buffer.from(
    JSON.stringify({ alg: 'dir', enc: 'A256GCM', ...header }),
    'utf8',
  ).toString('base64url');
  // A fresh random 96-bit IV per message: with one key, a repeated IV would break GCM.
  const iv = randomBytes(GCM_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
  // The protected header, as written, is the additional authenticated data.
  cipher.setAAD(Buffer.from(protectedB64, 'ascii'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [
    protectedB64,
    '', // `dir`: no encrypted key
    iv.toString('base64url'),
    ciphertext.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
  ].join('.');
}

/**
 * Opens a compact JWE of exactly the kind `encrypt` writes (`alg: dir`,
 * `enc: A256GCM`, no `zip`, no `crit`; RFC 7516 §5.2) with Node's AES-GCM,
 * synchronously. jose (WebCrypto only) made every read an async crypto job
 * plus its general header checks, about 3/4 of a token load; the format stays
 * standard JWE, which jose itself writes and any JOSE library reads.
 */
function openCompactJwe(
  jwe: string,
  keyFor: (kid: unknown) => KeyObject,
): { header: Record<string, unknown>; plaintext: string } {
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
    header = JSON.parse(Buffer.from(protectedB64, 'base64url').toString('utf8'));
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
  const iv = Buffer.from(ivB64, 'base64url');
  const tag = Buffer.from(tagB64, 'base64url');
  if (iv.length !== GCM_IV_BYTES || tag.length !== GCM_TAG_BYTES) {
    throw decryptionFailed('could not be decrypted (malformed iv or tag)');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
    // The protected header, as stored, is the additional authenticated data.
    decipher.setAAD(Buffer.from(protectedB64, 'ascii'));
    decipher.setAuthTag(tag);
    const plaintext = Buffer.concat([
      decipher.update(Buffer.from(ciphertextB64, 'base64url')),
      decipher.final(),
    ]);
    return { header: h, plaintext: plaintext.toString('utf8') };
  } catch {
    // A wrong key, a tampered ciphertext or header: the tag does not match.
    throw decryptionFailed('could not be decrypted (authentication failed)');
  }
}
