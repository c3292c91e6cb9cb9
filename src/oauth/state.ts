/**
 * OAuth `state` and the browser binding: random values compared in constant
 * time on equal-length digests, so neither length nor prefix leaks.
 */
import { randomBytes, sha256, timingSafeEqual, toBase64url } from '../crypto/primitives.js';

/** 256 bits from the CSPRNG, base64url (43 characters). */
export function createState(): string {
  return toBase64url(randomBytes(32));
}

/** Same shape as the state; set in a cookie to tie a pending install to one browser. */
export function createBrowserBinding(): string {
  return toBase64url(randomBytes(32));
}

/** What the database keeps instead of the binding itself. */
export function hashBinding(binding: string): string {
  return toBase64url(sha256(binding));
}

/** Constant-time equality of two secrets of any length. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
