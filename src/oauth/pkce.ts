/**
 * PKCE (RFC 7636) with S256, the only method the platform accepts.
 */
import { randomBytes, sha256, toBase64url } from '../crypto/primitives.js';

/**
 * A fresh code verifier: 32 CSPRNG bytes as base64url, i.e. 43 characters of
 * the RFC 7636 unreserved alphabet carrying 256 bits of entropy.
 */
export function createCodeVerifier(): string {
  return toBase64url(randomBytes(32));
}

/** BASE64URL(SHA256(ASCII(verifier))) without padding (RFC 7636 §4.2). */
export function codeChallengeS256(verifier: string): string {
  return toBase64url(sha256(verifier));
}
