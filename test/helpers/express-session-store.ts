/**
 * express-session's `Store` over the kit's session-store port (the built-in
 * storage's sessions), for tests that drive the kit's sessions table through an
 * express-session of their own. The kit itself uses the port directly
 * (src/core/browser-session.ts) and never loads express-session. express-session reads
 * a session's lifetime from its cookie; this passes it on as the port's TTL (the
 * cookie's `expires`, else `maxAge`, else the store's default).
 */
import session, { type SessionData, type Store } from 'express-session';
import type { KitSessionStore, StoredSession } from '../../src/core/session-store.js';

type Callback<T = void> = (err?: unknown, value?: T) => void;

/** The lifetime a session's cookie gives it, in ms from now (undefined: the store's default). */
function ttlOf(sess: SessionData): number | undefined {
  const cookie = sess.cookie as
    | { expires?: Date | string | null; maxAge?: number | null }
    | undefined;
  const expires = cookie?.expires;
  if (expires) {
    const at = new Date(expires).getTime();
    if (!Number.isNaN(at)) return at - Date.now();
  }
  return typeof cookie?.maxAge === 'number' ? cookie.maxAge : undefined;
}

function settle<T>(promise: Promise<T>, cb: Callback<T> | undefined): void {
  promise.then(
    (value) => cb?.(null, value),
    (err: unknown) => cb?.(err),
  );
}

/**
 * An express-session `Store` on `sessions` (`prune` and `close` are passed on
 * when the port has them).
 */
export function expressSessionStore(
  sessions: KitSessionStore & { prune?(now?: Date): Promise<number>; close?(): void },
): Store & { prune(now?: Date): Promise<number>; close(): void } {
  class KitExpressStore extends session.Store {
    override get(sid: string, cb: Callback<SessionData | null>): void {
      settle(
        sessions.get(sid).then((d) => (d as unknown as SessionData | null) ?? null),
        cb,
      );
    }
    override set(sid: string, sess: SessionData, cb?: Callback): void {
      settle(sessions.set(sid, sess as unknown as StoredSession, ttlOf(sess)), cb);
    }
    override touch(sid: string, sess: SessionData, cb?: Callback): void {
      const data = sess as unknown as StoredSession;
      settle(
        sessions.touch
          ? sessions.touch(sid, data, ttlOf(sess))
          : sessions.set(sid, data, ttlOf(sess)),
        cb,
      );
    }
    override destroy(sid: string, cb?: Callback): void {
      settle(sessions.destroy(sid), cb);
    }
    /** Deletes expired sessions now (the built-in storage). */
    prune(now?: Date): Promise<number> {
      return sessions.prune ? sessions.prune(now) : Promise.resolve(0);
    }
    close(): void {
      sessions.close?.();
    }
  }
  return new KitExpressStore();
}
