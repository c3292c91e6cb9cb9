/**
 * An app's own express-session bound to a store, for `createAuthenticated` outside a
 * kit (tests, benchmarks). The kit itself never uses `req.session`: its browser session
 * is core/browser-session.ts under its own cookie, so a host's express-session is left
 * alone (issue 32). The `SessionData` fields below type what that outside use stores.
 */
import type { RequestHandler } from 'express';
// Types only (req.session, SessionData): the kit never loads express-session.
import type {} from 'express-session';

declare module 'express-session' {
  interface SessionData {
    /** The merchant store this browser session acts for. */
    storeId?: string;
    /**
     * When the session was bound to the store (install or admin launch), epoch
     * ms. Its absolute lifetime counts from here; requests do not extend it.
     */
    authAt?: number;
  }
}

/** Replace the session id (fixation defence) and bind it to a store, then save. */
export function startStoreSession(
  req: Parameters<RequestHandler>[0],
  storeId: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!req.session) {
      reject(new Error('The session middleware is not mounted before this route.'));
      return;
    }
    req.session.regenerate((err) => {
      if (err) {
        reject(err);
        return;
      }
      req.session.storeId = storeId;
      req.session.authAt = Date.now();
      req.session.save((saveErr) => (saveErr ? reject(saveErr) : resolve()));
    });
  });
}
