/**
 * The Fetch shell's adapters: a `CoreRequest` over a web `Request` (lazy: the
 * URL and cookies are parsed on first use, the body read once within its size
 * and time bounds) and a `Response` from a `CoreResponse`.
 */
import type { Logger } from 'pino';
import { readCookie } from '../../core/cookies.js';
import {
  CoreBodyError,
  type CoreCookie,
  type CoreRequest,
  type CoreResponse,
  type CoreSession,
} from '../../core/http.js';
import { FETCH_BODY_CONSUMED_FIX } from '../../webhooks/pipeline.js';

export interface FetchRequestContext {
  /** The client's address as the caller's server trusts it (a `Request` has none). */
  remoteAddress: string | undefined;
  log: Logger;
  session: CoreSession;
  /** The path the route table matches: the URL's, under the app URL's path. */
  path?: string;
}

/** A `CoreRequest` over a web `Request`. */
export function toCoreRequest(request: Request, ctx: FetchRequestContext): CoreRequest {
  let url: URL | undefined;
  const u = () => {
    url ??= new URL(request.url);
    return url;
  };
  let read: Promise<Uint8Array> | undefined;
  return {
    method: request.method.toUpperCase(),
    get path() {
      return ctx.path ?? u().pathname;
    },
    query: (name) => u().searchParams.get(name) ?? undefined,
    queryAll: (name) => u().searchParams.getAll(name),
    queryKeys: () => [...new Set(u().searchParams.keys())],
    header: (name) => request.headers.get(name) ?? undefined,
    cookie: (name) => readCookie(request.headers.get('cookie') ?? undefined, name),
    get hasCookies() {
      return request.headers.has('cookie');
    },
    body: (maxBytes, timeoutMs) => {
      read ??= readBounded(request, maxBytes, timeoutMs);
      return read;
    },
    // The server drains or closes: a body not read is cancelled, so nothing holds it.
    refuseBody: () => {
      if (read === undefined && request.body !== null && !request.bodyUsed) {
        request.body.cancel().catch(() => {});
      }
    },
    remoteAddress: ctx.remoteAddress,
    session: ctx.session,
    log: ctx.log,
  };
}

/**
 * The body's bytes: refused at once when the declared length is over `maxBytes`,
 * cut off as soon as the bytes read pass it, and abandoned when the whole body
 * has not arrived within `timeoutMs` (however slowly its bytes trickle in).
 */
async function readBounded(request: Request, maxBytes: number, timeoutMs: number) {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw new CoreBodyError('too_large', 'Body too large');
  }
  if (request.body === null) return new Uint8Array(0);
  // Read before the kit (Hono's c.req.json(), a parser): the signed bytes are gone. The
  // same answer as on Express (503, the platform retries), never a 500.
  if (request.bodyUsed) throw new CoreBodyError('consumed', FETCH_BODY_CONSUMED_FIX);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new CoreBodyError('timeout', `The body did not arrive within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw new CoreBodyError('too_large', 'Body too large');
      chunks.push(value);
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    if (err instanceof CoreBodyError) throw err;
    throw new CoreBodyError('aborted', 'The client aborted the body');
  } finally {
    clearTimeout(timer);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** A `Set-Cookie` value (the value URI-encoded, as Express and express-session write it). */
export function serializeCookie(c: CoreCookie): string {
  const parts = [`${c.name}=${encodeURIComponent(c.value)}`, `Path=${c.path}`];
  if (c.maxAgeSeconds !== undefined) {
    const expires = c.maxAgeSeconds === 0 ? 0 : Date.now() + c.maxAgeSeconds * 1000;
    parts.push(`Max-Age=${c.maxAgeSeconds}`, `Expires=${new Date(expires).toUTCString()}`);
  }
  if (c.httpOnly) parts.push('HttpOnly');
  if (c.secure) parts.push('Secure');
  parts.push(`SameSite=${c.sameSite[0]?.toUpperCase()}${c.sameSite.slice(1)}`);
  if (c.partitioned) parts.push('Partitioned');
  return parts.join('; ');
}

const CONTENT_TYPES = {
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
  text: 'text/plain; charset=utf-8',
} as const;

/**
 * A web `Response` from a `CoreResponse` (its `onClose` runs now: the answer is
 * complete). `head`: the answer to a HEAD request (headers only).
 */
export function toResponse(r: CoreResponse, head = false): Response {
  const headers = new Headers(r.headers);
  for (const c of r.cookies) headers.append('set-cookie', serializeCookie(c));
  let body: string | null = null;
  if (r.body.kind !== 'empty') {
    body = r.body.kind === 'json' ? JSON.stringify(r.body.value) : r.body.value;
    if (!headers.has('content-type')) headers.set('content-type', CONTENT_TYPES[r.body.kind]);
  }
  // `connection` is the server's to set: a Response may not carry it.
  headers.delete('connection');
  r.onClose?.();
  return new Response(head ? null : body, { status: r.status, headers });
}
