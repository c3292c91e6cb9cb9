/**
 * The launch watch's Express side: the request layer notes a GET carrying a launch
 * token, and when its response finishes without `kit.authenticated()` having read
 * it (a static `index.html`, a route without the kit), the watch remembers the miss
 * (src/authenticated/launch-watch.ts explains the 401s that follow).
 */
import type { Request, Response } from 'express';
import type { LaunchWatch } from '../../authenticated/launch-watch.js';

const HANDLED = Symbol('store-app-kit.launchHandled');

export interface ExpressLaunchWatch {
  /** In `kit.middleware()`'s first layer. */
  note(req: Request, res: Response): void;
  /** `kit.authenticated()` saw this request. */
  markHandled(req: Request): void;
}

export function expressLaunchWatch(watch: LaunchWatch): ExpressLaunchWatch {
  const { param } = watch;
  return {
    note(req, res) {
      // `req.query` parses the query string on every read (Express 5): a URL
      // without one carries no launch token, and most requests have none.
      if (req.method === 'GET' && req.url.includes('?') && typeof req.query[param] === 'string') {
        res.once('finish', () => {
          if ((req as unknown as Record<symbol, boolean>)[HANDLED] || res.statusCode >= 300) return;
          watch.missed(req.path);
        });
      }
    },
    markHandled(req) {
      (req as unknown as Record<symbol, boolean>)[HANDLED] = true;
      // A launch that does reach kit.authenticated(): the app is mounted right now.
      if (typeof req.query[param] === 'string') watch.read();
    },
  };
}
