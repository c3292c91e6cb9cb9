/**
 * The Express shell's two adapters: `toCoreRequest` (lazy accessors over `req`, no
 * `Request` object built) and `sendCoreResponse`. Handlers of `src/core` see no Express.
 */
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { readCookie } from '../../core/cookies.js';
import {
  CoreBodyError,
  type CoreCookie,
  type CoreRequest,
  type CoreResponse,
  type CoreSession,
} from '../../core/http.js';
import { startStoreSession } from '../../http/session.js';
import type { WithRawBody } from '../../webhooks/raw-body.js';

export { readCookie };

function firstString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}

/**
 * The express-session of `req` as a `CoreSession`; `start` binds it to a store
 * (regenerating its id) unless the caller brings its own.
 */
export function sessionOf(req: Request, start?: CoreSession['start']): CoreSession {
  return {
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

/** Reads the body once: bytes a parser kept (`keepRawBody`) or the stream, bounded. */
function bodyReader(req: Request): CoreRequest['body'] {
  let read: Promise<Uint8Array> | undefined;
  return (maxBytes, timeoutMs) => {
    read ??= new Promise<Uint8Array>((resolve, reject) => {
      const kept = (req as Request & WithRawBody).rawBody;
      if (kept instanceof Uint8Array) {
        if (kept.byteLength > maxBytes) reject(new CoreBodyError('too_large', 'Body too large'));
        else resolve(kept);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (err?: CoreBodyError) => {
        clearTimeout(timer);
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
        req.off('close', onClose);
        if (err) reject(err);
        else resolve(Buffer.concat(chunks, size));
      };
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) done(new CoreBodyError('too_large', 'Body too large'));
        else chunks.push(chunk);
      };
      const onEnd = () => done();
      const onError = () => done(new CoreBodyError('aborted', 'The client aborted the body'));
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
    return read;
  };
}

/**
 * A `CoreRequest` over Express's `req` (the logger: `res.locals.log`, else
 * `fallbackLog`; the session: `session`, else express-session's).
 */
export function toCoreRequest(
  req: Request,
  res: Response,
  fallbackLog: Logger,
  session?: CoreSession,
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
    get remoteAddress() {
      return req.ip ?? req.socket.remoteAddress;
    },
    get session() {
      return session ?? sessionOf(req);
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

/** Writes a `CoreResponse` to Express's `res`. */
export function sendCoreResponse(res: Response, r: CoreResponse): void {
  if (r.onClose) res.once('close', r.onClose);
  for (const c of r.cookies) setCookie(res, c);
  res.status(r.status);
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  switch (r.body.kind) {
    case 'empty':
      res.end();
      return;
    case 'json':
      res.json(r.body.value);
      return;
    case 'html':
      res.type('html').send(r.body.value);
      return;
    case 'text':
      // A type the core set (the browser module's JavaScript) stays.
      if (!res.hasHeader('content-type')) res.type('text');
      res.send(r.body.value);
      return;
  }
}
