/**
 * express-session on the storage adapter's sessions (never MemoryStore), or
 * on the app's own store. Session data holds the store id only: tokens stay
 * in the installations.
 *
 * Behind a TLS-terminating proxy set `app.set('trust proxy', 1)` (or the
 * proxy's hop count): with Secure cookies, express-session only sets the
 * cookie on requests it believes are HTTPS.
 */
import type { Request, RequestHandler } from 'express';
import type { Store } from 'express-session';
import { isBearerRequest } from '../../core/bearer.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { expressFamily } from './family.js';

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

/**
 * An app session token request without a cookie (the embedded frontend's
 * fetches: the admin's iframe has no usable cookies) has no browser session
 * to load; making and hashing a new, never-saved one was a tenth of it.
 */
export function hasNoBrowserSession(req: Pick<Request, 'headers'>): boolean {
  return req.headers.cookie === undefined && isBearerRequest(req.headers.authorization);
}

/**
 * express-session for browser requests: a request that `hasNoBrowserSession`
 * gets no `req.session` (the kit's request layer skips this whole layer for it).
 */
export function sessionMiddleware(
  options: ResolvedHttpOptions['session'],
  store: Store,
): RequestHandler {
  const handler = expressFamily().session({
    name: options.cookieName,
    secret: options.secret,
    store,
    resave: false,
    // No cookie for visitors who never start a session (and no row per request).
    saveUninitialized: false,
    rolling: false,
    cookie: {
      httpOnly: true,
      secure: options.secure,
      sameSite: options.sameSite,
      partitioned: options.partitioned,
      maxAge: options.maxAgeSeconds * 1000,
      path: '/',
    },
  });
  return function storeAppSession(req, res, next) {
    if (hasNoBrowserSession(req)) {
      next();
      return;
    }
    handler(req, res, next);
  };
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
