/**
 * The browser session in the Fetch shell, shared with the Express shell: the
 * same cookie (express-session's `s:<id>.<signature>`, HMAC-SHA256 with the
 * session secret, the first secret signing and every secret verifying) and the
 * same session store, so a session started by either shell is read by both.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionData, Store } from 'express-session';
import type { CoreCookie, CoreSession, CoreSessionData } from '../../core/http.js';
import type { ResolvedHttpOptions } from '../../http/options.js';

type SessionOptions = Pick<
  ResolvedHttpOptions['session'],
  'cookieName' | 'secret' | 'secure' | 'sameSite' | 'partitioned' | 'maxAgeSeconds'
>;

/** express-session's (cookie-signature's) signature of a session id. */
function sign(id: string, secret: string): string {
  return `${id}.${createHmac('sha256', secret).update(id).digest('base64').replace(/=+$/, '')}`;
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
    const a = Buffer.from(sign(id, secret));
    const b = Buffer.from(signed);
    if (a.length === b.length && timingSafeEqual(a, b)) return id;
  }
  return undefined;
}

/** A request's session, and the cookies its changes need on the response. */
export interface FetchSession {
  session: CoreSession;
  cookies: CoreCookie[];
}

function call<T>(fn: (cb: (err?: unknown, v?: T) => void) => void): Promise<T | undefined> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

/** Sessions over `store` with the app's session options. */
export function createFetchSessions(options: SessionOptions, store: Store) {
  const cookieBase = {
    name: options.cookieName,
    httpOnly: true,
    secure: options.secure,
    sameSite: options.sameSite,
    path: '/',
    ...(options.partitioned ? { partitioned: true } : {}),
  } as const;

  /** The session of a request whose session cookie holds `cookieValue`. */
  return function sessionFor(cookieValue: string | undefined): FetchSession {
    let id = unsignSessionCookie(cookieValue, options.secret);
    let data: Partial<CoreSessionData> | undefined | null;
    const cookies: CoreCookie[] = [];
    const load = async () => {
      if (data === undefined && id !== undefined) {
        const got = await call<SessionData | null>((cb) => store.get(id!, cb));
        data = (got ?? null) as Partial<CoreSessionData> | null;
      }
      return data ?? undefined;
    };
    const session: CoreSession = {
      async read() {
        const d = await load();
        return d?.storeId === undefined ? undefined : { storeId: d.storeId, authAt: d.authAt };
      },
      async touchAuthAt(authAt) {
        const d = await load();
        if (!d || id === undefined) return;
        d.authAt = authAt;
        await call((cb) => store.set(id!, d as SessionData, cb));
      },
      async start(storeId) {
        // A new id (no fixation): the old session, if any, ends.
        if (id !== undefined) await call((cb) => store.destroy(id!, cb));
        id = randomBytes(24).toString('base64url');
        const maxAgeMs = options.maxAgeSeconds * 1000;
        const cookie = {
          ...cookieBase,
          originalMaxAge: maxAgeMs,
          expires: new Date(Date.now() + maxAgeMs),
        };
        data = { storeId, authAt: Date.now() };
        const stored = { cookie, ...data } as unknown as SessionData;
        await call((cb) => store.set(id!, stored, cb));
        const value = `s:${sign(id, options.secret[0] ?? '')}`;
        cookies.push({ ...cookieBase, value, maxAgeSeconds: options.maxAgeSeconds });
      },
      async destroy() {
        if (id !== undefined) await call((cb) => store.destroy(id!, cb));
        id = undefined;
        data = null;
        cookies.push({ ...cookieBase, value: '', maxAgeSeconds: 0 });
      },
    };
    return { session, cookies };
  };
}
