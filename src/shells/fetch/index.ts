/**
 * The Fetch shell: the kit's routes as `fetch(request) → Response | null` and
 * `authenticate(request)` for app routes, for Hono, Bun.serve, Deno.serve and
 * Next.js route handlers. Same core handlers as the Express shell, same
 * browser sessions (see ./session.ts).
 */
import type { Store } from 'express-session';
import type { Logger } from 'pino';
import type { AuthenticatedStore } from '../../authenticated/index.js';
import type { createBearerAuthenticate } from '../../core/authenticate.js';
import { readCookie } from '../../core/cookies.js';
import { type CoreHandler, respond } from '../../core/http.js';
import type { ResolvedHttpOptions } from '../../http/options.js';
import { toCoreRequest, toResponse } from './adapter.js';
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
  bearer: ReturnType<typeof createBearerAuthenticate>;
  logger: Logger;
}

export interface FetchShell {
  /** The kit's answer to `request`, or null when it is not a kit route. */
  fetch(request: Request, options?: FetchOptions): Promise<Response | null>;
  /**
   * The store of a request carrying `Authorization: Bearer <app session token>`,
   * or the `Response` to send (401 with the re-authorise header, 503, 500).
   */
  authenticate(request: Request): Promise<AuthenticatedStore | Response>;
}

/** Builds the Fetch shell over the kit's core handlers. */
export function createFetchShell(deps: FetchShellDeps): FetchShell {
  const sessions = createFetchSessions(deps.session, deps.sessionStore);
  const byPath = new Map(deps.routes.map((r) => [r.path, r]));

  async function run(handler: CoreHandler, request: Request, options: FetchOptions) {
    const log = deps.logger;
    const { session, cookies } = sessions(
      readCookie(request.headers.get('cookie') ?? undefined, deps.session.cookieName),
    );
    try {
      const core = toCoreRequest(request, { remoteAddress: options.remoteAddress, log, session });
      const r = await handler(core);
      r.cookies.push(...cookies);
      return toResponse(r);
    } catch (err) {
      // No stack or message of ours reaches the client: the log has it.
      log.error({ err }, 'kit route failed');
      return toResponse(
        respond.json(500, { code: 'INTERNAL_ERROR', message: 'The app could not answer.' }),
      );
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
    async authenticate(request) {
      const decision = await deps.bearer(request.headers.get('authorization') ?? undefined);
      return decision.ok ? decision.store : toResponse(decision.response);
    },
  };
}
