/**
 * Notices an admin launch that never reached `kit.authenticated()`. The admin
 * frames the app's page with a launch token; only `kit.authenticated()` turns
 * it into a session. When something answers that page first (a static
 * `index.html` from `express.static` mounted before the route, or a route
 * without `kit.authenticated()`), no session starts and every call the page
 * makes is refused as "no session", which is what the merchant just did
 * start. Two signs, each enough:
 *   - the page load passed `kit.middleware()` carrying a launch token and was
 *     answered without `kit.authenticated()` reading it (remembered here);
 *   - a call without a session comes from a page of this app whose URL holds
 *     a launch token (its `Referer`: browsers send it on same-origin calls
 *     unless the page forbids it, and a page served before the kit has none
 *     of the kit's headers).
 * Either turns the 401's message into what is actually wrong and how to fix
 * it, and the first one logs a warning once per path. No token is logged.
 */
import type { Request, Response } from 'express';

/** How long a missed launch explains later calls without a session. */
const REMEMBER_MS = 10 * 60 * 1000;
const HANDLED = Symbol('store-app-kit.launchHandled');

export interface LaunchWatch {
  /**
   * In `kit.middleware()`'s first layer: remembers a launch page answered
   * without `kit.authenticated()`.
   */
  note(req: Request, res: Response): void;
  /** `kit.authenticated()` saw this request. */
  markHandled(req: Request): void;
  /** The 401 message for a call without a session, when a missed launch explains it. */
  explain(req: Request): string | undefined;
  /** `explain` from the call's `Referer` and `Host` (the shell-free form the core calls). */
  explainCall(referer: string | undefined, host: string | undefined): string | undefined;
}

export interface LaunchWatchDeps {
  /** The launch token's query parameter (`embedded.launchParam`). */
  param: string;
  logger?: { warn(obj: Record<string, unknown>, msg: string): void };
  now?: () => number;
}

const FIX =
  'Serve the page the admin opens (your app URL, usually `/`) behind kit.authenticated(), ' +
  'and mount express.static after that route or with { index: false } ' +
  '(see "Mount order" in docs/embedded.md).';

export function createLaunchWatch(deps: LaunchWatchDeps): LaunchWatch {
  const now = deps.now ?? Date.now;
  let missed: { path: string; at: number } | undefined;
  const warned = new Set<string>();

  const message = (path: string) =>
    `No app session: the store admin opened ${path} with a launch token, but that page was ` +
    'answered before kit.authenticated() read it (a static index.html, or a route without ' +
    `kit.authenticated()), so no session started. ${FIX}`;

  function note(req: Request, res: Response): void {
    // `req.query` parses the query string on every read (Express 5): a URL
    // without one carries no launch token, and most requests have none.
    if (
      req.method === 'GET' &&
      req.url.includes('?') &&
      typeof req.query[deps.param] === 'string'
    ) {
      res.once('finish', () => {
        if ((req as unknown as Record<symbol, boolean>)[HANDLED] || res.statusCode >= 300) return;
        const path = req.path;
        missed = { path, at: now() };
        if (warned.size < 100 && !warned.has(path)) {
          warned.add(path);
          deps.logger?.warn(
            { path },
            `The admin's launch of GET ${path} was answered without kit.authenticated(): no app session started, and the page's calls will get 401 SESSION_REQUIRED. ${FIX}`,
          );
        }
      });
    }
  }

  function explainCall(referer: string | undefined, host: string | undefined) {
    if (referer) {
      try {
        const from = new URL(referer);
        if (from.host === host && from.searchParams.has(deps.param)) {
          return message(`GET ${from.pathname}`);
        }
      } catch {
        // Not a URL: nothing to learn from it.
      }
    }
    if (missed && now() - missed.at < REMEMBER_MS) return message(`GET ${missed.path}`);
    return undefined;
  }

  return {
    note,
    markHandled(req: Request) {
      (req as unknown as Record<symbol, boolean>)[HANDLED] = true;
      // A launch that does reach kit.authenticated(): the app is mounted right now.
      if (typeof req.query[deps.param] === 'string') missed = undefined;
    },
    explain(req: Request) {
      return explainCall(req.get('referer'), req.get('host'));
    },
    explainCall,
  };
}
