/**
 * The Express shell's adapters: `toCoreRequest` (lazy accessors over `req`, no
 * `Request` object built), its body-reading port over the Node stream, and
 * `sendCoreResponse`. Handlers of `src/core` and the features see no Express.
 */
import type { Request, Response } from 'express';
import { type Logger, pino } from 'pino';
import type { BrowserSession } from '../../core/browser-session.js';
import { readCookie } from '../../core/cookies.js';
import {
  CoreBodyError,
  type CoreCookie,
  type CoreRequest,
  type CoreResponse,
  type CoreSession,
} from '../../core/http.js';
import { BODY_ALREADY_CONSUMED_FIX } from '../../webhooks/pipeline.js';
import type { WithRawBody } from '../../webhooks/raw-body.js';
import { startStoreSession } from './session.js';

export { readCookie };

/** A logger that logs nothing (the core warns through its own loggers). */
export const SILENT: Logger = pino({ enabled: false });

// A refused body up to this size is drained to keep the connection; a larger
// one closes it (draining would only hold the socket for the sender).
const DRAIN_KEEP_ALIVE_BYTES = 64 * 1024;
// Past this many discarded bytes the socket is cut rather than drained, so a
// sender cannot keep us reading forever.
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
/** How long a refused body may take to drain. */
const DRAIN_DEADLINE_MS = 10_000;

function firstString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}

/**
 * An app's own express-session (`req.session`) as a `CoreSession`, for
 * `createAuthenticated` outside a kit (tests, benchmarks); `start` binds it to a
 * store (regenerating its id) unless the caller brings its own. The kit never uses
 * it: its session is `kitSessionOf`'s, under its own cookie.
 */
export function expressSessionOf(
  req: Request,
  cookieName: string,
  start?: CoreSession['start'],
): CoreSession {
  return {
    get presented() {
      return readCookie(req.headers.cookie, cookieName) !== undefined;
    },
    async read() {
      const s = req.session;
      if (!s || s.storeId === undefined) return undefined;
      return { storeId: s.storeId, authAt: s.authAt };
    },
    async touchAuthAt(authAt) {
      if (req.session) req.session.authAt = authAt;
    },
    start: start ?? ((storeId) => startStoreSession(req, storeId)),
    destroy: () =>
      new Promise<void>((resolve, reject) => {
        if (!req.session) return resolve();
        req.session.destroy((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** Where a request keeps the kit's session once made: its own key, never `req.session`. */
const KIT_SESSION = Symbol('store-app-kit.session');

/**
 * The kit's browser session of `req` (core/browser-session.ts), made on first use
 * and kept for the request, so the kit's routes and `authenticated()` share it; a
 * new or ended session's cookie is set on `res` at once. Nothing is read from the
 * session store until the kit asks (a host route never does).
 */
export function kitSessionOf(
  req: Request,
  res: Response,
  sessionFor: (cookieValue: string | undefined) => BrowserSession,
  cookieName: string,
): CoreSession {
  const holder = req as Request & { [KIT_SESSION]?: CoreSession };
  const kept = holder[KIT_SESSION];
  if (kept) return kept;
  const { session, cookies } = sessionFor(readCookie(req.headers.cookie, cookieName));
  const flush = () => {
    for (const c of cookies.splice(0)) if (!res.headersSent) setCookie(res, c);
  };
  const kit: CoreSession = {
    presented: session.presented,
    read: () => session.read(),
    touchAuthAt: (authAt) => session.touchAuthAt(authAt),
    async start(storeId) {
      await session.start(storeId);
      flush();
    },
    async destroy() {
      await session.destroy();
      flush();
    },
  };
  holder[KIT_SESSION] = kit;
  return kit;
}

/** The session of a request the kit never binds (the webhook receiver, health). */
const NO_SESSION: CoreSession = {
  presented: false,
  read: async () => undefined,
  touchAuthAt: async () => {},
  start: () => Promise.reject(new Error('This route has no browser session.')),
  destroy: async () => {},
};

/** The bytes a parser before the kit kept (`keepRawBody`, `express.raw()`), if any. */
function keptBody(req: Request): Uint8Array | undefined {
  const kept = (req as Request & WithRawBody).rawBody;
  if (kept instanceof Uint8Array) return kept;
  if (typeof kept === 'string') return Buffer.from(kept, 'utf8');
  return Buffer.isBuffer(req.body) ? (req.body as Buffer) : undefined;
}

/** Reads the stream up to `maxBytes` within `timeoutMs` (the whole body, whatever its pace). */
function readStream(req: Request, maxBytes: number, timeoutMs: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: CoreBodyError) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) {
        chunks.length = 0;
        reject(err);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) done(new CoreBodyError('too_large', 'Body too large'));
      else chunks.push(chunk);
    };
    const onEnd = () => done();
    const onError = () => done(new CoreBodyError('aborted', 'The client aborted the body'));
    // A socket closed mid-body may end with only 'close': never leave the promise pending.
    const onClose = () => {
      if (!req.complete) onError();
    };
    const timer = setTimeout(
      () => done(new CoreBodyError('timeout', `The body did not arrive within ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** The body-reading port over `req`: the kept copy, else the stream, read once. */
function bodyReader(req: Request): CoreRequest['body'] {
  let read: Promise<Uint8Array> | undefined;
  return (maxBytes, timeoutMs) => {
    read ??= (async () => {
      const kept = keptBody(req);
      if (kept) {
        if (kept.byteLength > maxBytes) throw new CoreBodyError('too_large', 'Body too large');
        return kept;
      }
      if (req.readableEnded || (req.complete && !req.readable)) {
        throw new CoreBodyError('consumed', BODY_ALREADY_CONSUMED_FIX);
      }
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        throw new CoreBodyError('too_large', 'Body too large');
      }
      return readStream(req, maxBytes, timeoutMs);
    })();
    return read;
  };
}

/**
 * Closes the connection once the answer is written (`Connection: close` does that
 * in Node), and for certain a second later in case the sender stops reading.
 */
function closeSoon(req: Request): void {
  const timer = setTimeout(() => req.socket.destroy(), 1000);
  timer.unref();
  req.socket.once('close', () => clearTimeout(timer));
}

/**
 * Gets rid of the unread body of a refused request: a small one is drained
 * (keeping the connection for the next request) within the deadline; a large or
 * undeclared one closes the connection after the answer, so refusing never holds
 * a socket or a buffer for the sender.
 */
function refuseBody(req: Request, res: Response): void {
  if (req.readableEnded || keptBody(req) !== undefined) return;
  const declared = Number(req.headers['content-length']);
  if (!(Number.isFinite(declared) && declared <= DRAIN_KEEP_ALIVE_BYTES)) {
    res.setHeader('Connection', 'close');
    closeSoon(req);
  }
  let dropped = 0;
  const timer = setTimeout(() => req.socket.destroy(), DRAIN_DEADLINE_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_LIMIT_BYTES) req.socket.destroy();
  });
  req.on('end', () => clearTimeout(timer));
  req.on('close', () => clearTimeout(timer));
  req.on('error', () => {});
  req.resume();
}

/**
 * A `CoreRequest` over Express's `req` (the logger: `res.locals.log`, else
 * `fallbackLog`; the session: `session` (a thunk: made when first read), else none).
 */
export function toCoreRequest(
  req: Request,
  res: Response,
  fallbackLog: Logger,
  session?: CoreSession | (() => CoreSession),
): CoreRequest {
  const q = req.query as Record<string, unknown>;
  return {
    method: req.method,
    path: req.path,
    query: (name) => firstString(q[name]),
    queryAll: (name) => {
      const v = q[name];
      if (typeof v === 'string') return [v];
      return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
    },
    queryKeys: () => Object.keys(q),
    header: (name) => {
      const v = req.headers[name.toLowerCase()];
      return Array.isArray(v) ? v.join(', ') : v;
    },
    cookie: (name) => readCookie(req.headers.cookie, name),
    get hasCookies() {
      return req.headers.cookie !== undefined;
    },
    body: bodyReader(req),
    refuseBody: () => refuseBody(req, res),
    get remoteAddress() {
      return req.ip ?? req.socket.remoteAddress;
    },
    get session() {
      if (session === undefined) return NO_SESSION;
      return typeof session === 'function' ? session() : session;
    },
    get log() {
      return (res.locals.log as Logger | undefined) ?? fallbackLog;
    },
  };
}

function setCookie(res: Response, c: CoreCookie): void {
  const opts = {
    httpOnly: c.httpOnly,
    secure: c.secure,
    sameSite: c.sameSite,
    path: c.path,
    ...(c.partitioned ? { partitioned: true } : {}),
  };
  if (c.maxAgeSeconds === 0) res.clearCookie(c.name, opts);
  else
    res.cookie(c.name, c.value, {
      ...opts,
      ...(c.maxAgeSeconds === undefined ? {} : { maxAge: c.maxAgeSeconds * 1000 }),
    });
}

const CONTENT_TYPES = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  text: 'text/plain; charset=utf-8',
} as const;

/**
 * Writes a `CoreResponse` to Express's `res`: status, headers, cookies and body as
 * they are, without `res.send`'s ETag (a SHA-1 of every body, for answers no client
 * revalidates: they are never cached). `connection: close` closes the connection
 * once the answer is written.
 */
export function sendCoreResponse(res: Response, req: Request, r: CoreResponse): void {
  if (res.headersSent) return;
  if (r.onClose) res.once('close', r.onClose);
  for (const c of r.cookies) setCookie(res, c);
  res.statusCode = r.status;
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  if (r.headers['connection'] === 'close') closeSoon(req);
  if (r.body.kind === 'empty') {
    res.end();
    return;
  }
  const text = r.body.kind === 'json' ? JSON.stringify(r.body.value) : r.body.value;
  if (r.headers['content-type'] === undefined) {
    res.setHeader('content-type', CONTENT_TYPES[r.body.kind]);
  }
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}
