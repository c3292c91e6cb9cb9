/**
 * The kit's browser session, one for both shells: its own cookie (`session.cookieName`,
 * express-session's `s:<id>.<signature>` format, HMAC-SHA256 with the session secret,
 * the first secret signing and every secret verifying) over the session-store port.
 * It is never `req.session`: a host app's own express-session (or none) is left alone,
 * and the kit's session is loaded only by the kit's routes and `authenticated()`, so a
 * request that touches neither reads and writes no session row (issue 32).
 */

import {
  hmacSha256,
  randomBytes,
  timingSafeEqual,
  toBase64,
  toBase64url,
  utf8,
} from '../crypto/primitives.js';
import type { CoreCookie, CoreSession, CoreSessionData } from './http.js';
import type { KitSessionStore, StoredSession } from './session-store.js';

/** The session options the browser session needs (the resolved `session` options). */
export interface BrowserSessionOptions {
  cookieName: string;
  /** Signing secrets: the first signs, every one verifies. */
  secret: readonly string[];
  secure: boolean;
  sameSite: 'lax' | 'strict' | 'none';
  partitioned: boolean;
  maxAgeSeconds: number;
}

/** express-session's (cookie-signature's) signature of a session id. */
function sign(id: string, secret: string): string {
  return `${id}.${toBase64(hmacSha256(secret, id)).replace(/=+$/, '')}`;
}

/** The session id of a signed cookie value, or undefined when no secret signed it. */
export function unsignSessionCookie(
  value: string | undefined,
  secrets: readonly string[],
): string | undefined {
  if (!value?.startsWith('s:')) return undefined;
  const signed = value.slice(2);
  const id = signed.slice(0, signed.lastIndexOf('.'));
  for (const secret of secrets) {
    const a = utf8(sign(id, secret));
    const b = utf8(signed);
    if (a.length === b.length && timingSafeEqual(a, b)) return id;
  }
  return undefined;
}

/** What is left of a stored session's lifetime (its cookie's `expires`), in ms. */
function ttlOf(stored: StoredSession | null): number | undefined {
  const expires = (stored?.['cookie'] as { expires?: unknown } | undefined)?.expires;
  if (typeof expires !== 'string' && !(expires instanceof Date)) return undefined;
  const at = new Date(expires).getTime();
  return Number.isNaN(at) ? undefined : at - Date.now();
}

/** A request's session, and the cookies its changes need on the response. */
export interface BrowserSession {
  session: CoreSession;
  cookies: CoreCookie[];
}

/** Sessions over `store` (the kit's session-store port) with the app's session options. */
export function createBrowserSessions(options: BrowserSessionOptions, store: KitSessionStore) {
  const cookieBase = {
    name: options.cookieName,
    httpOnly: true,
    secure: options.secure,
    sameSite: options.sameSite,
    path: '/',
    ...(options.partitioned ? { partitioned: true } : {}),
  } as const;

  /** The session of a request whose session cookie holds `cookieValue`. */
  return function sessionFor(cookieValue: string | undefined): BrowserSession {
    let id = unsignSessionCookie(cookieValue, options.secret);
    let data: Partial<CoreSessionData> | undefined | null;
    const cookies: CoreCookie[] = [];
    const presented = cookieValue !== undefined;
    let stored: StoredSession | null = null;
    const load = async () => {
      if (data === undefined && id !== undefined) {
        stored = await store.get(id);
        data = stored as Partial<CoreSessionData> | null;
      }
      return data ?? undefined;
    };
    const session: CoreSession = {
      presented,
      async read() {
        const d = await load();
        return d?.storeId === undefined ? undefined : { storeId: d.storeId, authAt: d.authAt };
      },
      async touchAuthAt(authAt) {
        const d = await load();
        if (!d || id === undefined) return;
        d.authAt = authAt;
        await store.set(id, { ...(stored ?? {}), ...d } as StoredSession, ttlOf(stored));
      },
      async start(storeId) {
        // A new id (no fixation): the old session, if any, ends.
        if (id !== undefined) await store.destroy(id);
        id = toBase64url(randomBytes(24));
        const maxAgeMs = options.maxAgeSeconds * 1000;
        const cookie = {
          ...cookieBase,
          originalMaxAge: maxAgeMs,
          expires: new Date(Date.now() + maxAgeMs),
        };
        data = { storeId, authAt: Date.now() };
        stored = { cookie, ...data } as StoredSession;
        await store.set(id, stored, maxAgeMs);
        const value = `s:${sign(id, options.secret[0] ?? '')}`;
        cookies.push({ ...cookieBase, value, maxAgeSeconds: options.maxAgeSeconds });
      },
      async destroy() {
        if (id !== undefined) await store.destroy(id);
        id = undefined;
        data = null;
        cookies.push({ ...cookieBase, value: '', maxAgeSeconds: 0 });
      },
    };
    return { session, cookies };
  };
}
