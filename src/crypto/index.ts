/**
 * Token encryption at rest: every token (and PKCE verifier) the kit stores is
 * a compact JWE (`alg: dir`, `enc: A256GCM`) so any JOSE library can read it
 * given the key. The store id travels in the protected header (`sid`), which
 * AES-GCM authenticates, and is checked after decryption: a ciphertext copied
 * onto another store's row is refused.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
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
  const byKid = new Map(parsed.map((k) => [k.kid, k.bytes]));
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

  function failed(why: string, cause?: unknown): TokenDecryptionError {
    return new TokenDecryptionError(DECRYPTION_FAILED, `stored value ${why}`, { cause });
  }

  return {
    currentKid: current.kid,
    async encrypt(plaintext, storeId) {
      return new CompactEncrypt(encoder.encode(plaintext))
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: current.kid, sid: storeId })
        .encrypt(current.bytes);
    },
    async decrypt(jwe, storeId) {
      let kid: unknown;
      try {
        kid = decodeProtectedHeader(jwe).kid;
      } catch {
        throw failed('is not a compact JWE');
      }
      const key = typeof kid === 'string' ? byKid.get(kid) : undefined;
      if (key === undefined) {
        throw new TokenDecryptionError(
          UNKNOWN_KEY_ID,
          `stored value was encrypted with a key that is not in ${setting}; ` +
            'add the previous key back (after the newest) and run `npx store-app rotate-keys`',
        );
      }
      let result: Awaited<ReturnType<typeof compactDecrypt>>;
      try {
        result = await compactDecrypt(jwe, key, {
          keyManagementAlgorithms: ['dir'],
          contentEncryptionAlgorithms: ['A256GCM'],
        });
      } catch (cause) {
        // The jose error names the check that failed; it never holds the ciphertext.
        const code = (cause as { code?: unknown }).code;
        throw failed(
          `could not be decrypted (${typeof code === 'string' ? code : 'invalid'})`,
          cause instanceof Error ? new Error(cause.message) : undefined,
        );
      }
      if (result.protectedHeader.sid !== storeId) {
        throw failed('belongs to another store (copied between rows?)');
      }
      return decoder.decode(result.plaintext);
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
