/**
 * OAuth `state` and the browser binding: random values compared in constant
 * time on equal-length digests, so neither length nor prefix leaks.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256 bits from the CSPRNG, base64url (43 characters). */
export function createState(): string {
  return randomBytes(32).toString('base64url');
}

/** Same shape as the state; set in a cookie to tie a pending install to one browser. */
export function createBrowserBinding(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps instead of the binding itself. */
export function hashBinding(binding: string): string {
  return createHash('sha256').update(binding, 'utf8').digest('base64url');
}

/** Constant-time equality of two secrets of any length. */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}
