/**
 * The Fetch shell: the kit's routes as `fetch(request) → Response | null` and
 * `authenticate(request)` for app routes, for Hono, Bun.serve, Deno.serve and
 * Next.js route handlers. Same core handlers as the Express shell, same
 * browser sessions (see ./session.ts).
 */
import type { Store } from 'express-session';
import type { Logger } from 'pino';
import type { AuthenticatedStore } from '../../authenticated/index.js';
import type { AuthDecision } from '../../core/authenticate.js';
import { readCookie } from '../../core/cookies.js';
import { type CoreHandler, type CoreRequest, type CoreResponse, respond } from '../../core/http.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { toCoreRequest, toResponse } from './adapter.js';
import { launchRedirect } from './launch.js';
import { createFetchSessions } from './session.js';

/** Per-request facts a `Request` does not carry. */
export interface FetchOptions {
  /**
   * The client's address as your server trusts it: it keys the install
   * callback's per-source limit. Hono on Node: `c.env.incoming.socket.remoteAddress`;
   * Bun: `server.requestIP(req)?.address`; Deno: `info.remoteAddr.hostname`.
   * @default undefined (all callers share one source)
   */
  remoteAddress?: string;
}

export interface FetchShellDeps {
  /** Kit routes by exact path; the method list answers 405 for the others (webhooks), or null (GET routes). */
  routes: Array<{ path: string; methods: readonly string[] | 'any'; handler: CoreHandler }>;
  session: ResolvedHttpOptions['session'];
  sessionStore: Store;
  /** The core's `authenticate` (bearer, launch, cookie session). */
  authenticate(req: CoreRequest): Promise<AuthDecision>;
  /** The launch token's query parameter, dropped from the URL a launch redirects to. */
  launchParam: string | undefined;
  logger: Logger;
}

export interface FetchShell {
  /** The kit's answer to `request`, or null when it is not a kit route. */
  fetch(request: Request, options?: FetchOptions): Promise<Response | null>;
  /**
   * The store of a request (app session token, the admin's launch, or the
   * session cookie), or the `Response` to send: a launch's redirect carrying
   * the new session cookie, re-authorisation, 401, 403, 503, 500.
   */
  authenticate(request: Request, options?: FetchOptions): Promise<AuthenticatedStore | Response>;
}

const INTERNAL = () =>
  respond.json(500, { code: 'INTERNAL_ERROR', message: 'The app could not answer.' });

/**
 * Every 401 names its scheme (RFC 9110 requires a challenge); API clients of
 * the Fetch shell read `invalid_token` there, as before it read cookies.
 */
function withChallenge(r: CoreResponse): CoreResponse {
  if (r.status === 401 && r.headers['www-authenticate'] === undefined) {
    r.headers['www-authenticate'] = 'Bearer error="invalid_token"';
  }
  return r;
}

/** Builds the Fetch shell over the kit's core handlers. */
export function createFetchShell(deps: FetchShellDeps): FetchShell {
  const sessions = createFetchSessions(deps.session, deps.sessionStore);
  const byPath = new Map(deps.routes.map((r) => [r.path, r]));

  /** The core request of `request` with its session, and the cookies its session changes need. */
  function coreOf(request: Request, options: FetchOptions) {
    const { session, cookies } = sessions(
      readCookie(request.headers.get('cookie') ?? undefined, deps.session.cookieName),
    );
    const log = deps.logger;
    return {
      core: toCoreRequest(request, { remoteAddress: options.remoteAddress, log, session }),
      cookies,
    };
  }

  async function run(handler: CoreHandler, request: Request, options: FetchOptions) {
    const { core, cookies } = coreOf(request, options);
    try {
      const r = await handler(core);
      r.cookies.push(...cookies);
      return toResponse(r);
    } catch (err) {
      // No stack or message of ours reaches the client: the log has it.
      deps.logger.error({ err }, 'kit route failed');
      return toResponse(INTERNAL());
    }
  }

  return {
    async fetch(request, options = {}) {
      const route = byPath.get(new URL(request.url).pathname);
      if (!route) return null;
      const method = request.method.toUpperCase();
      if (route.methods !== 'any' && !route.methods.includes(method)) return null;
      return run(route.handler, request, options);
    },
    async authenticate(request, options = {}) {
      const { core, cookies } = coreOf(request, options);
      let decision: AuthDecision;
      try {
        decision = await deps.authenticate(core);
      } catch (err) {
        deps.logger.error({ err }, 'authenticate failed');
        return toResponse(INTERNAL());
      }
      if (!decision.ok) {
        decision.response.cookies.push(...cookies);
        return toResponse(withChallenge(decision.response));
      }
      // The new session's cookie reaches the browser on a redirect to the same URL without
      // the single-use launch token (kept out of history and of the page's Referer).
      if (decision.launched && deps.launchParam !== undefined) {
        const r = launchRedirect(request, deps.launchParam);
        r.cookies.push(...cookies);
        return toResponse(r);
      }
      return decision.store;
    },
  };
}
