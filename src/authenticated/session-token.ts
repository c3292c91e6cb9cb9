/**
 * App session tokens and admin launch tokens (both HS256 JWTs, jose).
 *
 * - The app session token is what the embedded frontend sends as
 *   `Authorization: Bearer`, because third-party cookies fail inside the admin's
 *   iframe. The kit mints it; its key is derived (HKDF) from the session secret,
 *   so it differs from the cookie-signing key and rotates with it.
 * - The launch token is what the admin puts in `?launch=` when it frames the app
 *   (docs/platform-contract.md, "Launching an embedded app"): signed with the
 *   app's client secret, `iss` = the platform, `aud` = client id, `sub` = store.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { createLru } from '../cache/lru.js';
import { isStoreId } from '../core/store-id.js';
import { deriveSubkey } from '../crypto/index.js';
import { randomUUID, utf8 } from '../crypto/primitives.js';
import { ConfigError, StorageError, StoreAppError } from '../errors/index.js';
import {
  LAUNCH_TOKEN_INVALID,
  SESSION_LIFETIME_EXCEEDED,
  SESSION_TOKEN_EXPIRED,
  SESSION_TOKEN_INVALID,
  SessionTokenError,
  tokenRefusal,
} from './errors.js';
import { createHs256Keys } from './hs256.js';

export type { SessionTokenErrorCode } from './errors.js';
export {
  LAUNCH_TOKEN_INVALID,
  SESSION_LIFETIME_EXCEEDED,
  SESSION_TOKEN_EXPIRED,
  SESSION_TOKEN_INVALID,
  SessionTokenError,
};

/** The refusal of a session token that failed verification (signature, audience, issuer, claims). */
const INVALID_SESSION_TOKEN =
  'The app session token is invalid (bad signature, audience, issuer or claims).';

/** Longer strings are not tokens we minted; refuse before any parsing. */
const MAX_TOKEN_LENGTH = 4096;
/** Verified session tokens remembered per process by default (`authenticated.rememberedTokens`). */
const VERIFIED_CACHE_SIZE = 10_000;
/**
 * Launch token ids remembered per process at most when the database claim is
 * the authority (`claim`): past it the oldest goes, and a replay of it is still
 * refused by the claim. Without a claim the only bound is time (an id is
 * dropped once its token can no longer be accepted, ~2 minutes).
 */
const MAX_REMEMBERED_LAUNCHES = 10_000;

/**
 * The key a verified token is remembered under: a number read from the last five
 * characters of its signature (HMAC-SHA256 output in base64url: 30 bits as good as
 * random), so a look-up on every request neither hashes the token (~260 characters)
 * nor allocates a slice of it, and the map compares numbers, not strings kept from an
 * earlier request (cold memory with many stores). The entry keeps the token, and only
 * an equal token is a hit: a token that shares the key is verified in full, and only
 * a verified one is ever stored.
 */
function rememberedKey(token: string): number {
  let key = 0;
  for (let i = Math.max(0, token.length - REMEMBERED_KEY_CHARS); i < token.length; i++) {
    key = (key << 6) ^ token.charCodeAt(i);
  }
  // A small integer (V8 keeps it unboxed): 30 bits.
  return key & 0x3fffffff;
}
const REMEMBERED_KEY_CHARS = 5;

/** What a verified app session token says. */
export interface VerifiedSession {
  storeId: string;
  /** When the merchant's session began (launch or install), epoch seconds; renewals keep it. */
  authTime: number;
  /**
   * The installation the token was minted for: its `installedAt` in epoch
   * milliseconds (our clock; compared for equality only). A reinstall sets a
   * new one, so a token from before an uninstall never works again.
   */
  installedAt: number;
}

/** What a minted token is bound to. */
export interface SessionBinding {
  /** `installedAt` of the store's installation, epoch milliseconds. */
  installedAt: number;
  /**
   * When the session it renews began, epoch seconds; a renewal passes the
   * original so no chain of renewals outlives the session's absolute lifetime.
   * @default now (a new session)
   */
  authTime?: number | undefined;
}

export interface SessionTokenIssuer {
  /**
   * Mint a token for the store's current installation (`binding.installedAt`);
   * `expiresAt` tells the frontend when to fetch a new one.
   */
  mint(storeId: string, binding: SessionBinding): Promise<{ token: string; expiresAt: Date }>;
  /** Verify and return the store id; throws SessionTokenError. */
  verify(token: string): Promise<string>;
  /** Verify and return the store id and when its session began; throws SessionTokenError. */
  verifySession(token: string): Promise<VerifiedSession>;
  /**
   * What `verifySession` answers from its memory of fully verified tokens (only
   * before the token's expiry and its session's end), or undefined when it would
   * have to verify: the session, and a slot the caller may fill with what it derived
   * from it (kept and forgotten with the token). Synchronous, never throws.
   */
  rememberedSession?(token: string): RememberedSession | undefined;
}

/** A remembered, fully verified token (see `SessionTokenIssuer.rememberedSession`). */
export interface RememberedSession {
  readonly session: Readonly<VerifiedSession>;
  /** Whatever the caller keeps beside the session; undefined until it sets one. */
  memo: unknown;
}

/** Claim carrying the session's original authentication time (epoch seconds). */
const AUTH_TIME_CLAIM = 'auth_time';
/** Claim carrying the installation's `installedAt` (epoch ms): one installation per token. */
const INSTALLATION_CLAIM = 'sak_inst';

export function createSessionTokens(config: {
  /** Session secrets, newest first: the first signs, all verify. */
  secrets: readonly string[];
  clientId: string;
  /** The app's URL, the token's `iss`. */
  issuer: string;
  ttlSeconds: number;
  clockToleranceSeconds: number;
  /**
   * Absolute lifetime of the session a token belongs to, in seconds: no token
   * is minted or accepted past `auth_time` + this, however often it was renewed.
   * @default 86400 (the default of `session.maxAgeSeconds`)
   */
  maxSessionAgeSeconds?: number;
  /**
   * Verified tokens remembered at most (least recently used forgotten first).
   * @default 10000
   */
  rememberedTokens?: number;
}): SessionTokenIssuer {
  const keys = config.secrets.map((secret) => deriveSubkey(secret, 'app-session-token/v1'));
  if (keys.length === 0) throw new ConfigError('session.secret', 'needs at least one secret.');
  const hs256 = createHs256Keys(keys);
  /**
   * token → (store, expiry ms). Only tokens that passed full verification enter;
   * an entry is used only before its `exp`. Saves the HMAC check (async WebCrypto
   * in jose) on every request of an embedded page.
   */
  const verified = createLru<
    number,
    RememberedSession & { readonly token: string; readonly until: number }
  >({
    max: config.rememberedTokens ?? VERIFIED_CACHE_SIZE,
  });
  const maxAge = config.maxSessionAgeSeconds ?? 86_400;
  const sessionEnd = (authTime: number) => authTime + maxAge;

  function rememberedSession(token: string): RememberedSession | undefined {
    const key = rememberedKey(token);
    const hit = verified.get(key);
    // Another token under the same key is a miss: the full verification decides.
    if (hit === undefined || hit.token !== token) return undefined;
    // The same entry each hit: nothing allocated on an embedded page's requests.
    if (Date.now() < hit.until) return hit;
    verified.delete(key);
    return undefined;
  }

  async function verifySession(token: string): Promise<VerifiedSession> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
      throw tokenRefusal(SESSION_TOKEN_INVALID, 'The app session token is malformed.');
    }
    const hit = rememberedSession(token);
    if (hit) return hit.session;
    // A token none of our keys signed is refused here, without jose's WebCrypto path.
    const signer = hs256.signer(token);
    if (signer < 0) {
      throw tokenRefusal(SESSION_TOKEN_INVALID, INVALID_SESSION_TOKEN, {
        name: 'JWSSignatureVerificationFailed',
      });
    }
    try {
      const { payload } = await jwtVerify(token, await hs256.key(signer), {
        algorithms: ['HS256'],
        issuer: config.issuer,
        audience: config.clientId,
        clockTolerance: config.clockToleranceSeconds,
        requiredClaims: ['sub', 'exp', 'iat', AUTH_TIME_CLAIM, INSTALLATION_CLAIM],
        // A token cannot claim to live longer than we mint them.
        maxTokenAge: config.ttlSeconds + config.clockToleranceSeconds,
      });
      if (!isStoreId(payload.sub)) {
        throw tokenRefusal(SESSION_TOKEN_INVALID, 'The app session token names no store.');
      }
      const authTime = payload[AUTH_TIME_CLAIM];
      const iat = payload.iat ?? 0;
      if (
        typeof authTime !== 'number' ||
        !Number.isInteger(authTime) ||
        authTime > iat + config.clockToleranceSeconds
      ) {
        throw tokenRefusal(
          SESSION_TOKEN_INVALID,
          'The app session token has no valid session start.',
        );
      }
      const installedAt = payload[INSTALLATION_CLAIM];
      if (typeof installedAt !== 'number' || !Number.isSafeInteger(installedAt)) {
        throw tokenRefusal(SESSION_TOKEN_INVALID, 'The app session token names no installation.');
      }
      const now = Math.floor(Date.now() / 1000);
      // auth_time and now are both our clock: no tolerance at the session's end.
      if (now >= sessionEnd(authTime)) {
        throw tokenRefusal(
          SESSION_LIFETIME_EXCEEDED,
          'The app session reached its maximum age; open the app from the store admin again.',
        );
      }
      // Never trusted longer than jose would accept it: exp, iat + the lifetime we mint,
      // and the end of the session it belongs to.
      const until =
        Math.min(payload.exp ?? 0, iat + config.ttlSeconds, sessionEnd(authTime)) * 1000;
      const session = Object.freeze({ storeId: payload.sub, authTime, installedAt });
      verified.set(rememberedKey(token), { token, session, until, memo: undefined });
      return session;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) {
        throw tokenRefusal(
          SESSION_TOKEN_EXPIRED,
          'The app session token expired; fetch a new one and retry.',
        );
      }
      if (err instanceof SessionTokenError) throw err;
      throw tokenRefusal(
        SESSION_TOKEN_INVALID,
        INVALID_SESSION_TOKEN,
        err instanceof Error ? { name: err.name } : undefined,
      );
    }
  }

  return {
    async mint(storeId, { installedAt, authTime }) {
      if (!isStoreId(storeId)) {
        throw new SessionTokenError(
          SESSION_TOKEN_INVALID,
          'Cannot mint a token for that store id.',
        );
      }
      if (!Number.isSafeInteger(installedAt)) {
        throw new SessionTokenError(
          SESSION_TOKEN_INVALID,
          'Cannot mint a token without the installation it belongs to.',
        );
      }
      const iat = Math.floor(Date.now() / 1000);
      const start = authTime ?? iat;
      if (!Number.isInteger(start) || start > iat + config.clockToleranceSeconds) {
        throw new SessionTokenError(SESSION_TOKEN_INVALID, 'Cannot mint a token for that session.');
      }
      if (iat >= sessionEnd(start)) {
        throw new SessionTokenError(
          SESSION_LIFETIME_EXCEEDED,
          'The app session reached its maximum age; open the app from the store admin again.',
        );
      }
      // A renewal never reaches past the session's end.
      const exp = Math.min(iat + config.ttlSeconds, sessionEnd(start));
      const token = await new SignJWT({
        [AUTH_TIME_CLAIM]: start,
        [INSTALLATION_CLAIM]: installedAt,
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(config.issuer)
        .setAudience(config.clientId)
        .setSubject(storeId)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setJti(randomUUID())
        .sign(await hs256.key(0));
      return { token, expiresAt: new Date(exp * 1000) };
    },
    async verify(token) {
      return (await verifySession(token)).storeId;
    },
    verifySession,
    rememberedSession,
  };
}

export interface LaunchVerifier {
  /** Verify a launch token from the admin; returns the store id. Each token works once. */
  verify(token: string): Promise<string>;
}

function replayed(): SessionTokenError {
  return tokenRefusal(LAUNCH_TOKEN_INVALID, 'The launch token was already used.');
}

/** Oldest launch token accepted, whatever its `exp` says (the platform issues 60 s ones). */
const LAUNCH_MAX_AGE_SECONDS = 120;

/**
 * When a launch token's claim may be forgotten, in ms: one second after the
 * last instant jose accepts it (`acceptedUntilSeconds`), so rounding can
 * never open a gap in which a replay is accepted.
 */
export function launchClaimUntil(acceptedUntilSeconds: number): number {
  return (acceptedUntilSeconds + 1) * 1000;
}

/** The claimOnce namespace of launch token ids. */
export const LAUNCH_CLAIM_NAMESPACE = 'launch-jti';

export function createLaunchVerifier(config: {
  clientSecret: string;
  clientId: string;
  /** The platform's `{auth_url}`, the launch token's `iss`. */
  issuer: string;
  clockToleranceSeconds: number;
  /**
   * Claims a jti once across every instance on the database (Storage.claimOnce
   * with the namespace bound). Without it, replays are refused in this
   * process only.
   */
  claim?: (jti: string, expiresAt: Date) => Promise<boolean>;
}): LaunchVerifier {
  const hs256 = createHs256Keys([utf8(config.clientSecret)]);
  /** jti → expiry (ms): a launch URL replayed from history or a log starts no second session. */
  const used = new Map<string, number>();
  return {
    async verify(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
        throw tokenRefusal(LAUNCH_TOKEN_INVALID, 'The launch token is malformed.');
      }
      // One the client secret did not sign is refused without jose's WebCrypto path.
      if (hs256.signer(token) < 0) {
        throw tokenRefusal(LAUNCH_TOKEN_INVALID, 'The launch token is invalid.', {
          name: 'JWSSignatureVerificationFailed',
        });
      }
      let payload: Awaited<ReturnType<typeof jwtVerify>>['payload'];
      try {
        ({ payload } = await jwtVerify(token, await hs256.key(0), {
          algorithms: ['HS256'],
          issuer: config.issuer,
          audience: config.clientId,
          clockTolerance: config.clockToleranceSeconds,
          // Without a jti a launch link could not be refused on replay.
          requiredClaims: ['sub', 'exp', 'iat', 'jti'],
          maxTokenAge: LAUNCH_MAX_AGE_SECONDS + config.clockToleranceSeconds,
        }));
      } catch (err) {
        throw tokenRefusal(
          LAUNCH_TOKEN_INVALID,
          err instanceof joseErrors.JWTExpired
            ? 'The launch token expired; open the app from the admin again.'
            : 'The launch token is invalid.',
          err instanceof Error ? { name: err.name } : undefined,
        );
      }
      if (!isStoreId(payload.sub) || typeof payload.jti !== 'string') {
        throw tokenRefusal(LAUNCH_TOKEN_INVALID, 'The launch token names no store or has no id.');
      }
      const now = Date.now();
      // Ids arrive about in expiry order: drop expired ones from the front, stop
      // at the first live one (no scan of the whole map per launch).
      for (const [jti, until] of used) {
        if (until >= now) break;
        used.delete(jti);
      }
      // The in-memory set is the fast path; the database claim is the authority
      // (another instance may have seen the token).
      if (used.has(payload.jti)) throw replayed();
      // Remembered for as long as jose would still accept the token. jose
      // compares whole seconds (floor of now) with the tolerance applied to
      // both `exp` and the age: accepted while now < exp + tol and
      // floor(now) - iat <= maxTokenAge + tol, i.e. now < iat + maxAge + 2·tol + 1.
      const tol = config.clockToleranceSeconds;
      const acceptedUntil = Math.min(
        (payload.exp ?? 0) + tol,
        (payload.iat ?? 0) + LAUNCH_MAX_AGE_SECONDS + 2 * tol + 1,
      );
      const until = launchClaimUntil(acceptedUntil);
      if (config.claim) {
        let claimed: boolean;
        try {
          claimed = await config.claim(payload.jti, new Date(until));
        } catch (cause) {
          // The database is down: that is a 503, not a refused token.
          if (cause instanceof StoreAppError) throw cause;
          throw new StorageError('Could not record the launch token as used.', { cause });
        }
        if (!claimed) {
          used.set(payload.jti, until);
          throw replayed();
        }
      }
      used.set(payload.jti, until);
      if (config.claim && used.size > MAX_REMEMBERED_LAUNCHES) {
        used.delete(used.keys().next().value as string);
      }
      return payload.sub;
    },
  };
}
