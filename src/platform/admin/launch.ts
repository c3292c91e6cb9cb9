import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';

/** Lifetime of the `launch` JWT the admin hands an embedded app (contract). */
export const LAUNCH_TTL_SECONDS = 60;

/**
 * The contract's launch token: HS256 with the app's client secret,
 * iss = platform origin, aud = client_id, sub = store_id, exp = iat + 60 s.
 * Real time, not the platform clock: the app verifies it against its own clock.
 */
export function signLaunchToken(input: {
  issuer: string;
  clientId: string;
  clientSecret: string;
  storeId: string;
}): Promise<string> {
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(input.issuer)
    .setAudience(input.clientId)
    .setSubject(input.storeId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + LAUNCH_TTL_SECONDS)
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(input.clientSecret));
}
