/**
 * Pending installs live in the browser, not the database: `GET /auth` is
 * unauthenticated, so anything it wrote server-side would let anyone grow the
 * database at will. The browser keeps an encrypted, authenticated cookie
 * (JWE, `dir` + A256GCM, key derived from the session secret) listing its
 * pending installs: the hash of each `state`, the PKCE verifier, the store,
 * where to land, and an expiry. Only this browser holds it (the cookie is the
 * browser binding), nobody can read the verifier out of it or forge an entry,
 * and every instance sharing the session secret can complete an install
 * another began. Single use of a state is enforced at the callback by a
 * claim in the database, written only once a browser brings a genuine entry.
 */

import { EncryptJWT, jwtDecrypt } from 'jose';
import { deriveSubkey } from '../crypto/index.js';
import { sha256, toBase64url } from '../crypto/primitives.js';
import { safeEqual } from '../oauth/state.js';

/** One install begun in this browser and not yet completed. */
export interface PendingInstall {
  /** SHA-256 of the `state` sent to the platform, base64url. */
  stateHash: string;
  codeVerifier: string;
  storeId: string | null;
  returnTo: string | null;
  /** Set when this attempt is the one automatic restart after `invalid_grant`. */
  retried: boolean;
  /** Epoch seconds. */
  expiresAt: number;
}

/** Installs pending at once per browser (tabs); the oldest is dropped beyond this. */
export const MAX_PENDING_INSTALLS = 4;
/** Browsers drop cookies over 4096 bytes; stay well below with name and attributes. */
export const MAX_PENDING_COOKIE_LENGTH = 3600;
/** The claimOnce namespace of used states. */
export const STATE_CLAIM_NAMESPACE = 'oauth-state';

export function hashState(state: string): string {
  return toBase64url(sha256(state));
}

type Packed = [string, string, string | null, string | null, 0 | 1, number];

function isPacked(v: unknown): v is Packed {
  return (
    Array.isArray(v) &&
    v.length === 6 &&
    typeof v[0] === 'string' &&
    typeof v[1] === 'string' &&
    (v[2] === null || typeof v[2] === 'string') &&
    (v[3] === null || typeof v[3] === 'string') &&
    (v[4] === 0 || v[4] === 1) &&
    typeof v[5] === 'number'
  );
}

export interface PendingInstallCookie {
  /** The unexpired entries of a cookie value; [] for a missing, forged or stale cookie. */
  read(value: string | null): Promise<PendingInstall[]>;
  /** The cookie value holding `entries` (newest last; oldest dropped to fit). */
  write(entries: readonly PendingInstall[]): Promise<string>;
  /** The entry begun with `state`, compared in constant time. */
  find(entries: readonly PendingInstall[], state: string): PendingInstall | undefined;
}

export function createPendingInstallCookie(secrets: readonly string[]): PendingInstallCookie {
  const keys = secrets.map((secret) => deriveSubkey(secret, 'install-state/v1'));
  const signingKey = keys[0];
  if (!signingKey) throw new Error('createPendingInstallCookie needs a session secret.');
  return {
    async read(value) {
      if (!value || value.length > MAX_PENDING_COOKIE_LENGTH) return [];
      for (const key of keys) {
        try {
          const { payload } = await jwtDecrypt(value, key, {
            keyManagementAlgorithms: ['dir'],
            contentEncryptionAlgorithms: ['A256GCM'],
          });
          const list = payload['p'];
          if (!Array.isArray(list)) return [];
          const now = Math.floor(Date.now() / 1000);
          return list
            .filter(isPacked)
            .map(([stateHash, codeVerifier, storeId, returnTo, retried, expiresAt]) => ({
              stateHash,
              codeVerifier,
              storeId,
              returnTo,
              retried: retried === 1,
              expiresAt,
            }))
            .filter((e) => e.expiresAt > now)
            .slice(-MAX_PENDING_INSTALLS);
        } catch {
          // Another key may have written it (secret rotation); else it is not ours.
        }
      }
      return [];
    },
    async write(entries) {
      let list = entries.slice(-MAX_PENDING_INSTALLS);
      for (;;) {
        const exp = Math.max(0, ...list.map((e) => e.expiresAt));
        const value = await new EncryptJWT({
          p: list.map(
            (e): Packed => [
              e.stateHash,
              e.codeVerifier,
              e.storeId,
              e.returnTo,
              e.retried ? 1 : 0,
              e.expiresAt,
            ],
          ),
        })
          .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
          .setExpirationTime(exp)
          .encrypt(signingKey);
        // Long return_to values in several tabs: keep the newest installs that fit.
        if (value.length <= MAX_PENDING_COOKIE_LENGTH || list.length <= 1) return value;
        list = list.slice(1);
      }
    },
    find(entries, state) {
      const wanted = hashState(state);
      return entries.find((e) => safeEqual(e.stateHash, wanted));
    },
  };
}
