/**
 * The kit's request path without a framework: every entry point (install begin and
 * callback, webhook receiver, `authenticated()`, the session-token route, launch,
 * health) is a function of a `CoreRequest` that returns a `CoreResponse` (or, for
 * `authenticated()`, the store context). The shells adapt: `src/shells/express`
 * (Node `req`/`res`, no `Request` object built on the fast path) and `src/shells/fetch`
 * (`Request` → `Response`: Hono, Bun, Deno, Next.js route handlers).
 *
 * `src/core/` is the floor of the request path: the request and response shapes, the
 * route table and its one matching rule, the protocol rules every answer follows
 * (the 401 challenge, the security-header set, the store-id rule, bearer parsing) and
 * the session-store port. It imports no feature module, no framework, no `node:http`
 * and no database driver.
 */
import type { Logger } from 'pino';

/** What the core may read of a request. Every accessor is lazy: a shell pays only for what is read. */
export interface CoreRequest {
  /** Upper-case method. */
  readonly method: string;
  /** Path as received (not decoded), without the query. */
  readonly path: string;
  /** Query parameter, first value; undefined when absent. Repeated keys: see `queryAll`. */
  query(name: string): string | undefined;
  /** Every value of a query parameter (a repeated key is often an attack: callers refuse it). */
  queryAll(name: string): string[];
  /** Every query parameter name, once each, in order (to refuse unexpected shapes). */
  queryKeys(): string[];
  /** Header value (names are case-insensitive); several values joined with ", ". */
  header(name: string): string | undefined;
  /** A request cookie's raw (decoded) value. */
  cookie(name: string): string | undefined;
  /** True when the request carried a Cookie header at all. */
  readonly hasCookies: boolean;
  /**
   * The body-reading port. The raw body, read once and kept: rejects with
   * `CoreBodyError` past `maxBytes` (declared or read), when the whole body has not
   * arrived within `timeoutMs`, when the client went away, or when something
   * before the kit consumed it.
   */
  body(maxBytes: number, timeoutMs: number): Promise<Uint8Array>;
  /**
   * The body will not be read (or not to its end): the shell gets rid of what is
   * left without holding it, draining a small one to keep the connection or
   * closing the connection after the answer (Express), cancelling the stream (Fetch).
   */
  refuseBody(): void;
  /** The client's address as the shell trusts it (Express: `req.ip` under `trust proxy`). */
  readonly remoteAddress: string | undefined;
  /** The browser session (a cookie bound to a server-side row). */
  readonly session: CoreSession;
  /** This request's logger (redacting), e.g. with a request id. */
  readonly log: Logger;
}

/**
 * Why a body could not be read. The core maps each to a status (413, 408, 400;
 * `consumed`: a parser before the kit read it and kept no copy, 500).
 */
export class CoreBodyError extends Error {
  constructor(
    readonly reason: 'too_large' | 'timeout' | 'aborted' | 'consumed',
    message: string,
  ) {
    super(message);
    this.name = 'CoreBodyError';
  }
}

/** The part of the browser session the kit uses: which store it acts for, since when. */
export interface CoreSessionData {
  storeId: string | undefined;
  /** When the session was bound to the store (epoch ms). */
  authAt: number | undefined;
}

/**
 * The browser session. Express: express-session (`req.session`). Fetch: the same
 * signed cookie format and the same session store, so both shells share sessions.
 */
export interface CoreSession {
  /** The request carried a session cookie (valid or not): it presented credentials. */
  readonly presented: boolean;
  /** The session's data, or undefined when the request has no (valid) session. */
  read(): Promise<CoreSessionData | undefined>;
  /** Records `authAt` on a session that was bound before sessions carried it. */
  touchAuthAt(authAt: number): Promise<void>;
  /** A fresh session (new id: no fixation) bound to `storeId` from now on. */
  start(storeId: string): Promise<void>;
  /** Ends the session (logout, purge). */
  destroy(): Promise<void>;
}

/** A cookie to set; `maxAgeSeconds: 0` with an empty value clears it. */
export interface CoreCookie {
  name: string;
  value: string;
  httpOnly: boolean;
  secure: boolean;
  sameSite: 'lax' | 'strict' | 'none';
  path: string;
  maxAgeSeconds?: number;
  partitioned?: boolean;
}

export type CoreBody =
  | { kind: 'empty' }
  | { kind: 'json'; value: unknown }
  | { kind: 'html'; value: string }
  | { kind: 'text'; value: string };

/**
 * What to answer: a shell writes it as it is. `connection: close` in `headers` asks the
 * shell to close the connection once the answer is written (a Fetch server decides
 * that itself).
 */
export interface CoreResponse {
  status: number;
  /** Lower-case header names. A page's CSP is complete here (it includes frame-ancestors). */
  headers: Record<string, string>;
  cookies: CoreCookie[];
  body: CoreBody;
  /** Called once the response is finished or the connection closed (releases a slot). */
  onClose?: () => void;
}

/** A handler of the core: one entry point of the kit. */
export type CoreHandler = (req: CoreRequest) => Promise<CoreResponse>;

/** `CoreResponse` builders, so handlers read as decisions. */
export const respond = {
  json(status: number, value: unknown, headers: Record<string, string> = {}): CoreResponse {
    return { status, headers, cookies: [], body: { kind: 'json', value } };
  },
  html(status: number, value: string, headers: Record<string, string> = {}): CoreResponse {
    return { status, headers, cookies: [], body: { kind: 'html', value } };
  },
  empty(status: number, headers: Record<string, string> = {}): CoreResponse {
    return { status, headers, cookies: [], body: { kind: 'empty' } };
  },
  redirect(location: string, status = 302): CoreResponse {
    return {
      status,
      headers: { location, 'cache-control': 'no-store' },
      cookies: [],
      body: { kind: 'empty' },
    };
  },
};
