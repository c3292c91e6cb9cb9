/**
 * The webhook receiver's Express glue: reads the raw bytes from the Node
 * stream itself (or the copy a parser kept), drains or closes refused bodies,
 * and writes the answers the receiver's decisions give
 * (`createWebhookDecisions` in src/core/webhook-receiver.ts, shared with the
 * Fetch shell).
 *
 * Statuses: 405 other methods (with Allow), 415 non-JSON, 413 too large,
 * 400 missing/malformed headers or invalid JSON, 401 unsigned / bad
 * signature / stale or future timestamp (handlers never run; with the
 * Standard Webhooks scheme the headers are checked before any body byte is
 * read), 408 body slower than `bodyTimeoutMs`, 503 (Retry-After) when the
 * unverified bytes held would pass `maxUnverifiedBytes`, 200 processed,
 * duplicate or unknown topic, 202 when handlers outlast `ackTimeoutMs`, 500
 * when a handler fails (so the platform retries).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { CoreResponse } from '../core/http.js';
import {
  createWebhookDecisions,
  refusal,
  type WebhookDecisions,
} from '../core/webhook-receiver.js';
import { ConfigError } from '../errors/index.js';
import type { WebhookProcessor } from './handlers.js';
import type { ResolvedWebhookOptions } from './options.js';
import { keepRawBody, type WithRawBody } from './raw-body.js';
import type { MinimalLogger } from './types.js';

export { keepRawBody };

export const BODY_ALREADY_CONSUMED_FIX =
  'a body parser mounted before kit.middleware() consumed the webhook body and kept no raw ' +
  'copy, so its signature cannot be checked. Fix: mount kit.middleware() before ' +
  'express.json(), or keep the bytes with express.json({ verify: keepRawBody }) ' +
  "(import { keepRawBody } from 'store-app-kit')";

// Past this many discarded bytes of an oversized body the socket is cut
// rather than drained, so a sender cannot keep us reading forever.
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
// A refused body up to this size is drained to keep the connection; a larger
// one closes it (draining would only hold the socket for the sender).
const DRAIN_KEEP_ALIVE_BYTES = 64 * 1024;

/** Unverified body bytes reserved by the deliveries being read. */
interface Reservations {
  held: number;
  readonly max: number;
}

type BodyResult = { ok: true; body: Buffer; reserved: number } | { ok: false };

export function createWebhookReceiver(deps: {
  options: ResolvedWebhookOptions;
  process: WebhookProcessor;
  logger?: MinimalLogger;
  /** Current time in Unix seconds (tests). */
  nowSeconds?: () => number;
}): RequestHandler {
  const { options, logger } = deps;
  const decide = createWebhookDecisions(deps);
  let warnedConsumed = false;
  const reservations: Reservations = { held: 0, max: options.maxUnverifiedBytes };

  return async function webhookReceiver(req: Request, res: Response, _next: NextFunction) {
    const early =
      decide.refuseRequest(req.method, req.headers['content-type']) ??
      decide.refuseHeaders(req.headers, req.path);
    if (early) {
      // A refused delivery's unread body is drained or its connection closed (not for 405).
      if (early.status !== 405) refuseBody(req, res, options.bodyTimeoutMs);
      return send(res, early);
    }
    const read = await readRawBody(req, res, options, reservations, decide);
    if (read === 'consumed') {
      const error = new ConfigError('webhooks', BODY_ALREADY_CONSUMED_FIX, { status: 500 });
      if (!warnedConsumed) {
        warnedConsumed = true;
        logger?.error({ errorCode: error.code, path: req.path }, error.message);
      }
      return send(res, refusal(500, error.code, error.message));
    }
    if (!read.ok) return;
    let verified: Awaited<ReturnType<WebhookDecisions['verify']>>;
    try {
      verified = await decide.verify(read.body, req.headers, req.path);
    } finally {
      // Verified or refused: either way these bytes no longer count as unverified.
      reservations.held -= read.reserved;
    }
    if ('refused' in verified) return send(res, verified.refused);
    send(res, await decide.acknowledge(verified.event));
  };
}

/**
 * Writes a decision as a small JSON answer for the platform's sender, without
 * `res.json`'s ETag (a SHA-1 of every body, for a client that never revalidates).
 */
function send(res: Response, r: CoreResponse): void {
  if (res.headersSent) return;
  const text = r.body.kind === 'text' ? r.body.value : '';
  res.statusCode = r.status;
  for (const [name, value] of Object.entries(r.headers)) res.setHeader(name, value);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * The exact bytes of the body: a raw copy a parser kept, a Buffer from
 * `express.raw()`, or read from the stream here with the size limit, the
 * read deadline and a reservation against the unverified-bytes bound.
 * Answers 413, 408 and 503 itself; 'consumed' means a parser ate the stream.
 * A successful result's `reserved` bytes are released by the caller once the
 * body is verified.
 */
async function readRawBody(
  req: Request,
  res: Response,
  options: Pick<ResolvedWebhookOptions, 'maxBodyBytes' | 'bodyTimeoutMs'>,
  reservations: Reservations,
  decide: WebhookDecisions,
): Promise<BodyResult | 'consumed'> {
  const limit = options.maxBodyBytes;
  const kept = (req as Request & WithRawBody).rawBody;
  const preRead = Buffer.isBuffer(kept)
    ? kept
    : typeof kept === 'string'
      ? Buffer.from(kept, 'utf8')
      : Buffer.isBuffer(req.body)
        ? (req.body as Buffer)
        : undefined;
  if (preRead) {
    if (preRead.length > limit) {
      send(res, decide.tooLarge());
      return { ok: false };
    }
    return { ok: true, body: preRead, reserved: 0 };
  }
  if (req.readableEnded || (req.complete && !req.readable)) return 'consumed';

  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    refuseBody(req, res, options.bodyTimeoutMs);
    send(res, decide.tooLarge());
    return { ok: false };
  }
  // Reserve what the body may grow to before holding any of it.
  const reserved = Number.isFinite(declared) && declared >= 0 ? declared : limit;
  if (reservations.held + reserved > reservations.max) {
    refuseBody(req, res, options.bodyTimeoutMs);
    send(res, decide.busy());
    return { ok: false };
  }
  reservations.held += reserved;

  return new Promise<BodyResult>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = () => {
      reservations.held -= reserved;
      resolve({ ok: false });
    };
    const cleanup = () => {
      clearTimeout(deadline);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onError);
      req.off('close', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        refuseBody(req, res, options.bodyTimeoutMs);
        send(res, decide.tooLarge());
        fail();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ ok: true, body: Buffer.concat(chunks, size), reserved });
    };
    const onError = () => {
      cleanup();
      // The sender went away mid-body: nobody is left to read an answer.
      if (!res.headersSent) res.status(400).end();
      fail();
    };
    // The whole body within the deadline, whatever the pace of its bytes.
    const deadline = setTimeout(() => {
      cleanup();
      chunks.length = 0;
      send(res, decide.bodyTimeout());
      closeSoon(req);
      fail();
    }, options.bodyTimeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onError);
    // A socket closed mid-body may end with only 'close': never leave the promise pending.
    req.on('close', onError);
  });
}

/**
 * Deals with the unread body of a refused delivery: a small one is drained
 * (keeping the connection for the next delivery) within `deadlineMs`; a large
 * or undeclared one closes the connection after the answer, so refusing never
 * holds a socket or a buffer for the sender.
 */
function refuseBody(req: Request, res: Response, deadlineMs: number): void {
  if (req.readableEnded) return;
  const declared = Number(req.headers['content-length']);
  if (!(Number.isFinite(declared) && declared <= DRAIN_KEEP_ALIVE_BYTES)) {
    res.set('Connection', 'close');
    closeSoon(req);
  }
  let dropped = 0;
  const timer = setTimeout(() => req.socket.destroy(), deadlineMs);
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
 * Closes the connection once the answer is written (`Connection: close` does
 * that in Node), and for certain a second later in case the sender stops
 * reading.
 */
function closeSoon(req: Request): void {
  const timer = setTimeout(() => req.socket.destroy(), 1000);
  timer.unref();
  req.socket.once('close', () => clearTimeout(timer));
}
