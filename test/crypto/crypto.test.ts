import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  createTokenCipher,
  DECRYPTION_FAILED,
  generateKey,
  keyId,
  parseEncryptionKeys,
  UNKNOWN_KEY_ID,
} from '../../src/crypto/index.js';
import { ConfigError } from '../../src/errors/index.js';

const fromB64 = (k: string) => new Uint8Array(Buffer.from(k, 'base64url'));

describe('generateKey / parseEncryptionKeys', () => {
  it('generates distinct 32-byte base64url keys that parse', () => {
    const a = generateKey();
    const b = generateKey();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    const [parsed] = parseEncryptionKeys(a);
    expect(parsed?.bytes).toHaveLength(32);
    expect(parsed?.kid).toBe(keyId(fromB64(a)));
    expect(parsed?.kid).toMatch(/^[A-Za-z0-9_-]{11}$/);
  });

  it('reads a comma-separated list, newest first, spaces allowed', () => {
    const a = generateKey();
    const b = generateKey();
    const keys = parseEncryptionKeys(` ${a} , ${b} `);
    expect(keys.map((k) => k.kid)).toEqual([keyId(fromB64(a)), keyId(fromB64(b))]);
  });

  it.each([
    ['empty', ''],
    ['only commas', ' , '],
    ['too short', Buffer.alloc(16, 1).toString('base64url')],
    ['too long', Buffer.alloc(48, 1).toString('base64url')],
    ['not base64url', 'not a key!not a key!not a key!not a key!abcd'],
    ['duplicated', 'SAME'],
  ])('refuses %s with a ConfigError naming the setting and keygen, never the value', (_, raw) => {
    const value = raw === 'SAME' ? `${'A'.repeat(43)},${'A'.repeat(43)}` : raw;
    let error: unknown;
    try {
      parseEncryptionKeys(value);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    expect((error as ConfigError).setting).toBe('STORE_APP_ENCRYPTION_KEYS');
    if (raw !== 'SAME') expect((error as Error).message).toContain('npx store-app keygen');
    if (value.trim().length > 4)
      expect((error as Error).message).not.toContain(value.split(',')[0]);
  });

  it('names a custom setting', () => {
    expect(() => parseEncryptionKeys('', 'storage.encryptionKeys')).toThrow(
      expect.objectContaining({ setting: 'storage.encryptionKeys' }),
    );
  });
});

describe('createTokenCipher', () => {
  it('round-trips and writes a standard compact JWE (dir, A256GCM, kid, sid)', async () => {
    const key = generateKey();
    const cipher = createTokenCipher([key]);
    const jwe = await cipher.encrypt('at_secret_token', 'store-1');
    expect(jwe.split('.')).toHaveLength(5);
    expect(jwe).not.toContain('at_secret_token');
    expect(decodeProtectedHeader(jwe)).toEqual({
      alg: 'dir',
      enc: 'A256GCM',
      kid: keyId(fromB64(key)),
      sid: 'store-1',
    });
    expect(await cipher.decrypt(jwe, 'store-1')).toBe('at_secret_token');
    // Fresh IV each time.
    expect(await cipher.encrypt('at_secret_token', 'store-1')).not.toBe(jwe);
  });

  it('the stored format decrypts with jose alone given the key', async () => {
    const key = generateKey();
    const jwe = await createTokenCipher([key]).encrypt('rt_refresh', 'store-2');
    const { plaintext, protectedHeader } = await compactDecrypt(jwe, fromB64(key));
    expect(new TextDecoder().decode(plaintext)).toBe('rt_refresh');
    expect(protectedHeader.sid).toBe('store-2');
  });

  it('every encryption takes a fresh 96-bit IV (a repeated IV under one key breaks AES-GCM), and jose reads non-ASCII tokens', async () => {
    const key = generateKey();
    const cipher = createTokenCipher([key]);
    const ivs = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const iv = (await cipher.encrypt('t', 's')).split('.')[2] as string;
      expect(Buffer.from(iv, 'base64url')).toHaveLength(12);
      ivs.add(iv);
    }
    expect(ivs.size).toBe(10_000);
    const jwe = await cipher.encrypt('tøken-ü-🔑', 's');
    const { plaintext } = await compactDecrypt(jwe, fromB64(key));
    expect(new TextDecoder().decode(plaintext)).toBe('tøken-ü-🔑');
  });

  it('rotation: the newest key encrypts, older keys still decrypt, needsReencrypt tells them apart', async () => {
    const oldKey = generateKey();
    const newKey = generateKey();
    const before = createTokenCipher([oldKey]);
    const oldJwe = await before.encrypt('token-a', 's');
    const after = createTokenCipher([newKey, oldKey]);
    expect(await after.decrypt(oldJwe, 's')).toBe('token-a');
    expect(after.needsReencrypt(oldJwe)).toBe(true);
    const newJwe = await after.encrypt('token-a', 's');
    expect(decodeProtectedHeader(newJwe).kid).toBe(keyId(fromB64(newKey)));
    expect(after.needsReencrypt(newJwe)).toBe(false);
    expect(after.currentKid).toBe(keyId(fromB64(newKey)));
  });

  it('a removed key fails with UNKNOWN_KEY_ID naming the setting', async () => {
    const jwe = await createTokenCipher([generateKey()]).encrypt('t', 's');
    await expect(createTokenCipher([generateKey()]).decrypt(jwe, 's')).rejects.toMatchObject({
      code: UNKNOWN_KEY_ID,
      message: expect.stringContaining('STORE_APP_ENCRYPTION_KEYS'),
    });
  });

  it('refuses a ciphertext copied to another store', async () => {
    const cipher = createTokenCipher([generateKey()]);
    const jwe = await cipher.encrypt('token', 'store-a');
    await expect(cipher.decrypt(jwe, 'store-b')).rejects.toMatchObject({ code: DECRYPTION_FAILED });
  });

  it('refuses a tampered ciphertext or header, never echoing it', async () => {
    const cipher = createTokenCipher([generateKey()]);
    const jwe = await cipher.encrypt('token', 's');
    const parts = jwe.split('.');
    const flipped = [...parts];
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    flipped[3] = ct.toString('base64url');
    const err = await cipher.decrypt(flipped.join('.'), 's').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: DECRYPTION_FAILED });
    expect((err as Error).message).not.toContain(flipped[3]!);
    // Rewriting the sid in the header breaks the GCM tag (the header is authenticated).
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString());
    const forged = [
      Buffer.from(JSON.stringify({ ...header, sid: 'x' })).toString('base64url'),
      ...parts.slice(1),
    ];
    await expect(cipher.decrypt(forged.join('.'), 'x')).rejects.toMatchObject({
      code: DECRYPTION_FAILED,
    });
    await expect(cipher.decrypt('garbage', 's')).rejects.toMatchObject({ code: DECRYPTION_FAILED });
  });

  it('pins the algorithms: a JWE with another enc under the same key and kid is refused', async () => {
    const key = generateKey();
    const cipher = createTokenCipher([key]);
    const kid = keyId(fromB64(key));
    const other = await new CompactEncrypt(new TextEncoder().encode('token'))
      .setProtectedHeader({ alg: 'dir', enc: 'A128CBC-HS256', kid, sid: 's' })
      .encrypt(fromB64(key));
    await expect(cipher.decrypt(other, 's')).rejects.toMatchObject({ code: DECRYPTION_FAILED });
    const wrapped = await new CompactEncrypt(new TextEncoder().encode('token'))
      .setProtectedHeader({ alg: 'A256KW', enc: 'A256GCM', kid, sid: 's' })
      .encrypt(fromB64(key));
    await expect(cipher.decrypt(wrapped, 's')).rejects.toMatchObject({ code: DECRYPTION_FAILED });
  });

  it('reads a JWE that jose wrote with the same key, kid and store (the format stays standard JWE)', async () => {
    const key = generateKey();
    const jwe = await new CompactEncrypt(new TextEncoder().encode('tøken-ü'))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: keyId(fromB64(key)), sid: 's' })
      .encrypt(fromB64(key));
    expect(await createTokenCipher([key]).decrypt(jwe, 's')).toBe('tøken-ü');
  });

  it('refuses a JWE with zip, crit or an encrypted key, even under the right key and kid', async () => {
    const key = generateKey();
    const cipher = createTokenCipher([key]);
    const parts = (await cipher.encrypt('token', 's')).split('.');
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString());
    const withHeader = (extra: Record<string, unknown>) =>
      [
        Buffer.from(JSON.stringify({ ...header, ...extra })).toString('base64url'),
        ...parts.slice(1),
      ].join('.');
    for (const forged of [
      withHeader({ zip: 'DEF' }),
      withHeader({ crit: ['exp'], exp: 1 }),
      [parts[0], 'AAAA', ...parts.slice(2)].join('.'),
      [...parts.slice(0, 4), ''].join('.'),
    ]) {
      await expect(cipher.decrypt(forged, 's')).rejects.toMatchObject({ code: DECRYPTION_FAILED });
    }
  });
});
