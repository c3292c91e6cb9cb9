/**
 * PKCE (RFC 7636) with S256, the only method the platform accepts.
 */
import { createHash, randomBytes } from 'node:crypto';

/**
 * A fresh code verifier: 32 CSPRNG bytes as base64url, i.e. 43 characters of
 * the RFC 7636 unreserved alphabet carrying 256 bits of entropy.
 */
export function createCodeVerifier(): string {
  return randomBytes(32).toString('base64url');
}

/** BASE64URL(SHA256(ASCII(verifier))) without padding (RFC 7636 §4.2). */
export function codeChallengeS256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
