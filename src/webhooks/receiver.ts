/**
 * Express glue around `verify` and the processor: reads the raw bytes
 * itself, maps each failure to its own status, acknowledges slow handlers.
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
import {
  ConfigError,
  isStorageFailure,
  STORAGE_RETRY_AFTER_SECONDS,
  STORAGE_UNAVAILABLE,
} from '../errors/index.js';
import { recordError } from '../telemetry/index.js';
import {
  SIGNATURE_MISMATCH,
  WEBHOOK_HANDLER_FAILED,
  WebhookHandlerError,
  WebhookVerificationError,
} from './errors.js';
import type { WebhookProcessor } from './handlers.js';
import type { ResolvedWebhookOptions } from './options.js';
import { keepRawBody, type WithRawBody } from './raw-body.js';
import type { MinimalLogger, WebhookEvent } from './types.js';
import { checkDeliveryHeaders, verify } from './verify.js';

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
/** Seconds a sender turned away for `maxUnverifiedBytes` is asked to wait. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

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
  const { options, process: processEvent, logger } = deps;
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  let warnedConsumed = false;
  const ackClock = createAckClock(options.ackTimeoutMs);
  const reservations: Reservations = { held: 0, max: options.maxUnverifiedBytes };

  return async function webhookReceiver(req: Request, res: Response, _next: NextFunction) {
    if (req.method !== 'POST') {
      res.set('Allow', 'POST');
      return sendError(res, 405, 'METHOD_NOT_ALLOWED', 'Webhooks are delivered with POST');
    }
    if (!isJson(req.headers['content-type'])) {
      refuseBody(req, res, options.bodyTimeoutMs);
      return sendError(
        res,
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        'Webhook bodies must be Content-Type: application/json',
      );
    }

    if (options.scheme === 'standard-webhooks') {
      // Unsigned, stale or malformed: refused on its headers, before any body byte is held.
      try {
        checkDeliveryHeaders(req.headers, {
          headers: options.headers,
          toleranceSeconds: options.toleranceSeconds,
          nowSeconds: nowSeconds(),
        });
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        logger?.warn({ errorCode: err.code, path: req.path }, 'webhook delivery refused');
        refuseBody(req, res, options.bodyTimeoutMs);
        return sendError(res, err.status ?? 401, err.code, err.message);
      }
    }

    const read = await readRawBody(req, res, options, reservations);
    if (read === 'consumed') {
      const error = new ConfigError('webhooks', BODY_ALREADY_CONSUMED_FIX, { status: 500 });
      if (!warnedConsumed) {
        warnedConsumed = true;
        logger?.error({ errorCode: error.code, path: req.path }, error.message);
      }
      return sendError(res, 500, error.code, error.message);
    }
    if (!read.ok) return;

    let event: WebhookEvent;
    try {
      event =
        options.scheme === 'standard-webhooks'
          ? verify(read.body, req.headers, options.secrets, {
              headers: options.headers,
              toleranceSeconds: options.toleranceSeconds,
              nowSeconds: nowSeconds(),
            })
          : await options.scheme({
              rawBody: read.body,
              headers: req.headers,
              secrets: options.secrets,
              headerNames: options.headers,
              toleranceSeconds: options.toleranceSeconds,
              nowSeconds: nowSeconds(),
            });
    } catch (err) {
      const refusal =
        err instanceof WebhookVerificationError
          ? err
          : new WebhookVerificationError(SIGNATURE_MISMATCH, 'The custom verifier refused it');
      logger?.warn({ errorCode: refusal.code, path: req.path }, 'webhook delivery refused');
      return sendError(res, refusal.status ?? 401, refusal.code, refusal.message);
    } finally {
      // Verified or refused: either way these bytes no longer count as unverified.
      reservations.held -= read.reserved;
    }

    const work = processEvent(event).then(
      (outcome) => ({ outcome }),
      (error: unknown) => ({ error }),
    );
    const first = await ackClock.race(work);

    if (first === 'timeout') {
      logger?.warn(
        { webhookId: event.id, topic: event.topic, ackTimeoutMs: options.ackTimeoutMs },
        'webhook handlers still running; acknowledged with 202',
      );
      sendJson(res, 202, { status: 'accepted' });
      // The platform already has its 2xx: a late failure can only be logged.
      void work.then((late) => {
        if ('error' in late) logFailure(logger, event, late.error, true);
      });
      return;
    }
    if ('error' in first) {
      if (first.error instanceof WebhookVerificationError) {
        return sendError(res, first.error.status ?? 400, first.error.code, first.error.message);
      }
      logFailure(logger, event, first.error, false);
      if (isStorageFailure(first.error)) {
        // Nothing was recorded: the platform retries (after Retry-After).
        res.setHeader('Retry-After', String(STORAGE_RETRY_AFTER_SECONDS));
        return sendError(
          res,
          503,
          STORAGE_UNAVAILABLE,
          'The app could not reach its database; retry later',
        );
      }
      return sendError(
        res,
        500,
        WEBHOOK_HANDLER_FAILED,
        'The webhook could not be processed; retry later',
      );
    }
    sendJson(res, 200, { status: first.outcome });
  };
}

/**
 * The ack deadlines of the deliveries in flight, on one timer. Every delivery
 * waits the same `ms`, so deadlines come in arrival order and the timer only
 * needs the oldest. (A setTimeout, a clearTimeout and a Promise.race per
 * delivery were about 3% of a delivery's CPU under concurrent load.)
 */
export function createAckClock(ms: number) {
  const waiting = new Set<{ at: number; expire: () => void }>();
  let timer: NodeJS.Timeout | undefined;
  function tick(): void {
    timer = undefined;
    const now = performance.now();
    for (const w of waiting) {
      if (w.at > now) {
        arm(w.at - now);
        return;
      }
      waiting.delete(w);
      w.expire();
    }
  }
  function arm(delay: number): void {
    // Unref'd: a delivery in flight holds its socket open, which keeps the process up.
    timer = setTimeout(tick, delay);
    timer.unref();
  }
  return {
    /** The work's result, or 'timeout' when it takes longer than `ms`. */
    race<T>(work: Promise<T>): Promise<T | 'timeout'> {
      return new Promise((resolve) => {
        const w = { at: performance.now() + ms, expire: () => resolve('timeout') };
        waiting.add(w);
        if (timer === undefined) arm(ms);
        void work.then((result) => {
          waiting.delete(w);
          resolve(result);
        });
      });
    },
  };
}

export function logFailure(
  logger: MinimalLogger | undefined,
  event: WebhookEvent,
  error: unknown,
  afterAck: boolean,
): void {
  const cause = error instanceof WebhookHandlerError ? error.cause : error;
  logger?.error(
    { webhookId: event.id, topic: event.topic, err: cause, afterAck },
    afterAck
      ? 'webhook handler failed after the 202 acknowledgement; the platform will not retry (an uninstall purge stays in the outbox and is retried)'
      : 'webhook handler failed; answered 500 so the platform retries',
  );
}

function sendError(res: Response, status: number, code: string, message: string): void {
  if (res.headersSent) return;
  recordError('webhook', code);
  sendJson(res, status, { code, message });
}

/**
 * A small JSON answer for the platform's sender, without `res.json`'s ETag
 * (a SHA-1 of every body, for a client that never revalidates).
 */
function sendJson(res: Response, status: number, body: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function isJson(contentType: string | undefined): boolean {
  if (contentType === 'application/json') return true;
  if (typeof contentType !== 'string') return false;
  const media = contentType.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/json';
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
      tooLarge(res, limit);
      return { ok: false };
    }
    return { ok: true, body: preRead, reserved: 0 };
  }
  if (req.readableEnded || (req.complete && !req.readable)) return 'consumed';

  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    refuseBody(req, res, options.bodyTimeoutMs);
    tooLarge(res, limit);
    return { ok: false };
  }
  // Reserve what the body may grow to before holding any of it.
  const reserved = Number.isFinite(declared) && declared >= 0 ? declared : limit;
  if (reservations.held + reserved > reservations.max) {
    refuseBody(req, res, options.bodyTimeoutMs);
    res.set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS));
    sendError(
      res,
      503,
      'WEBHOOK_RECEIVER_BUSY',
      'Too many webhook bodies are being received at once; retry later',
    );
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
        tooLarge(res, limit);
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
      res.set('Connection', 'close');
      sendError(
        res,
        408,
        'WEBHOOK_BODY_TIMEOUT',
        `The webhook body did not arrive within ${options.bodyTimeoutMs} ms`,
      );
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

function tooLarge(res: Response, limit: number): void {
  sendError(res, 413, 'PAYLOAD_TOO_LARGE', `Webhook bodies are limited to ${limit} bytes`);
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
