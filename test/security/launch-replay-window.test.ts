/**
 * Issue 11 §5 (first bullet): the time a launch token's `jti` claim is kept
 * covers the whole window in which the token is accepted (`maxTokenAge` +
 * clock tolerance on both `exp` and the age). A token replayed at the edge
 * of that window, on another instance sharing the database, is refused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLaunchVerifier,
  LAUNCH_CLAIM_NAMESPACE,
} from '../../src/authenticated/session-token.js';
import { generateKey } from '../../src/crypto/index.js';
import { createStorage, type Storage } from '../../src/storage/index.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-launch-window-'));
const secret = randomBytes(32).toString('base64url');
const issuer = 'http://127.0.0.1:4400';
const clientId = 'client-launch-window';
const TOLERANCE = 5;
let storage: Storage;

beforeAll(async () => {
  storage = await createStorage({
    databaseUrl: join(dir, 'app.db'),
    encryptionKeys: [generateKey()],
  });
});
afterAll(async () => {
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Two app instances on one database (only the database claim is shared). */
function instances() {
  const make = () =>
    createLaunchVerifier({
      clientSecret: secret,
      clientId,
      issuer,
      clockToleranceSeconds: TOLERANCE,
      claim: (jti, expiresAt) => storage.claimOnce(LAUNCH_CLAIM_NAMESPACE, jti, expiresAt),
    });
  return [make(), make()] as const;
}

function launchToken(iat: number, exp: number): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setAudience(clientId)
    .setSubject('3f1c9a52-7d0e-4b8a-9c61-2e5f8d4a7b90')
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(randomBytes(8).toString('hex'))
    .sign(new TextEncoder().encode(secret));
}

describe('launch token replay window vs stored claim lifetime', () => {
  it('a launch token replayed just inside its acceptance window (age limit + tolerance) is refused', async () => {
    const now = Math.floor(Date.now() / 1000);
    // 128 s old with a long exp: jose accepts it up to 120 + 2×5 s of age.
    const token = await launchToken(now - 128, now + 600);
    const [a, b] = instances();
    await expect(a.verify(token)).resolves.toBe('3f1c9a52-7d0e-4b8a-9c61-2e5f8d4a7b90');
    await expect(b.verify(token)).rejects.toMatchObject({ code: 'LAUNCH_TOKEN_INVALID' });
    await expect(a.verify(token)).rejects.toMatchObject({ code: 'LAUNCH_TOKEN_INVALID' });
  });

  it('a platform-shaped token (exp = iat + 60) replayed in its last tolerated second is refused', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await launchToken(now - 64, now - 4);
    const [a, b] = instances();
    await expect(a.verify(token)).resolves.toBeTypeOf('string');
    await expect(b.verify(token)).rejects.toMatchObject({ code: 'LAUNCH_TOKEN_INVALID' });
  });
});
