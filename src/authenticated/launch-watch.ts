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
/** How long a missed launch explains later calls without a session. */
const REMEMBER_MS = 10 * 60 * 1000;

/**
 * The shell notes launches (the Express shell sees the page's response: see
 * src/shells/express/launch-watch.ts); the core explains the 401s that follow.
 */
export interface LaunchWatch {
  /** The launch token's query parameter. */
  readonly param: string;
  /** A GET of `path` carrying a launch token was answered without `authenticated()` reading it. */
  missed(path: string): void;
  /** `authenticated()` read a launch token: the page is mounted right now. */
  read(): void;
  /** The 401 message for a call without a session (from its `Referer` and `Host`), when a missed launch explains it. */
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
  let missedAt: { path: string; at: number } | undefined;
  const warned = new Set<string>();

  const message = (path: string) =>
    `No app session: the store admin opened ${path} with a launch token, but that page was ` +
    'answered before kit.authenticated() read it (a static index.html, or a route without ' +
    `kit.authenticated()), so no session started. ${FIX}`;

  function missed(path: string): void {
    missedAt = { path, at: now() };
    if (warned.size < 100 && !warned.has(path)) {
      warned.add(path);
      deps.logger?.warn(
        { path },
        `The admin's launch of GET ${path} was answered without kit.authenticated(): no app session started, and the page's calls will get 401 SESSION_REQUIRED. ${FIX}`,
      );
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
    if (missedAt && now() - missedAt.at < REMEMBER_MS) return message(`GET ${missedAt.path}`);
    return undefined;
  }

  return {
    param: deps.param,
    missed,
    read() {
      missedAt = undefined;
    },
    explainCall,
  };
}
