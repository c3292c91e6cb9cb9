/**
 * The webhook receiver, one pipeline for both shells (`createWebhookCore`): the
 * order of its checks, its answers, and the bounds on what a delivery may hold.
 * The shells supply the body-reading port only (src/shells/express/adapter.ts reads
 * Node streams, draining or closing refused bodies; src/shells/fetch/adapter.ts
 * reads the `Request` body).
 *
 * Statuses: 405 other methods (with Allow), 415 non-JSON, 400 missing/malformed
 * headers or invalid JSON, 401 unsigned / bad signature / stale or future timestamp
 * (handlers never run), 413 too large (declared or read), 503 (Retry-After) when the
 * unverified bytes held would pass `maxUnverifiedBytes`, 408 body slower than
 * `bodyTimeoutMs`, 400 body cut off, 200 processed, duplicate or unknown topic, 202
 * when handlers outlast `ackTimeoutMs`, 500 when a handler fails (so the platform
 * retries), 503 when the database is unreachable or when a parser before the kit
 * consumed the body (`WEBHOOK_BODY_CONSUMED`, Retry-After: the platform retries).
 */
import {
  CoreBodyError,
  type CoreHandler,
  type CoreRequest,
  type CoreResponse,
} from '../core/http.js';
import { unref } from '../core/timers.js';
import {
  isStorageFailure,
  STORAGE_RETRY_AFTER_SECONDS,
  STORAGE_UNAVAILABLE,
} from '../errors/index.js';
import { recordError } from '../telemetry/index.js';
import {
  SIGNATURE_MISMATCH,
  TIMESTAMP_OUT_OF_TOLERANCE,
  WEBHOOK_BODY_CONSUMED,
  WEBHOOK_HANDLER_FAILED,
  WebhookHandlerError,
  WebhookVerificationError,
} from './errors.js';
import type { WebhookProcessor } from './handlers.js';
import type { ResolvedWebhookOptions } from './options.js';
import type { MinimalLogger, WebhookEvent, WebhookHeaders } from './types.js';
import { checkDeliveryHeaders, verify } from './verify.js';

export interface WebhookCoreDeps {
  options: ResolvedWebhookOptions;
  process: WebhookProcessor;
  logger?: MinimalLogger;
  /**
   * The platform's time in Unix seconds (the kit's estimate from its `Date`
   * headers): delivery timestamps are the platform's, compared in its clock.
   * @default the instance's clock
   */
  nowSeconds?: () => number;
  /**
   * Read the platform's clock again (rate-limited by the caller); true when a
   * new reading arrived. A timestamp out of tolerance is checked once more
   * after it: the estimate may be missing (a fresh instance) or stale.
   */
  resyncClock?: () => Promise<boolean>;
}

/** Seconds a sender turned away for `maxUnverifiedBytes` is asked to wait. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

/** A small JSON answer for the platform's sender. */
function json(status: number, body: Record<string, string>, headers: Record<string, string> = {}) {
  const r: CoreResponse = {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    cookies: [],
    body: { kind: 'text', value: JSON.stringify(body) },
  };
  return r;
}

export function refusal(status: number, code: string, message: string, headers = {}): CoreResponse {
  recordError('webhook', code);
  return json(status, { code, message }, headers);
}

/** The request's headers as the verifiers read them (by lower-case name). */
function headersOf(req: CoreRequest): WebhookHeaders {
  return new Proxy({} as Record<string, string | undefined>, {
    get: (_t, name) => (typeof name === 'string' ? req.header(name) : undefined),
  });
}

/**
 * The receiver's decisions, shared by both shells: each returns the answer (or
 * the verified event); the shells only read bytes and write answers. One ack
 * clock per receiver.
 */
export function createWebhookDecisions(deps: WebhookCoreDeps) {
  const { options, logger } = deps;
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const ackClock = createAckClock(options.ackTimeoutMs);
  const check = { headers: options.headers, toleranceSeconds: options.toleranceSeconds };
  function headerFailure(
    headers: WebhookHeaders,
    now: number,
  ): WebhookVerificationError | undefined {
    try {
      checkDeliveryHeaders(headers, { ...check, nowSeconds: now });
      return undefined;
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      return err;
    }
  }

  return {
    /** 405 for another method, 415 for another content type, else undefined. */
    refuseRequest(method: string, contentType: string | undefined): CoreResponse | undefined {
      if (method !== 'POST') {
        return refusal(405, 'METHOD_NOT_ALLOWED', 'Webhooks are delivered with POST', {
          allow: 'POST',
        });
      }
      if (!isJson(contentType)) {
        return refusal(
          415,
          'UNSUPPORTED_MEDIA_TYPE',
          'Webhook bodies must be Content-Type: application/json',
        );
      }
      return undefined;
    },

    /**
     * Standard Webhooks: unsigned, stale or malformed headers refused before
     * any body byte. A timestamp out of tolerance is checked again after
     * reading the platform's clock once more (`resyncClock`). Answers the
     * refusal, or the delivery's arrival time (platform clock, Unix seconds):
     * the one instant its timestamp is judged against, here and again with
     * the signature, however long the body then takes to arrive.
     */
    async admitHeaders(
      headers: WebhookHeaders,
      path: string,
    ): Promise<{ refused: CoreResponse } | { arrivedAt: number }> {
      let arrivedAt = nowSeconds();
      if (options.scheme !== 'standard-webhooks') return { arrivedAt };
      let failure = headerFailure(headers, arrivedAt);
      if (failure?.code === TIMESTAMP_OUT_OF_TOLERANCE && (await deps.resyncClock?.())) {
        arrivedAt = nowSeconds();
        failure = headerFailure(headers, arrivedAt);
      }
      if (!failure) return { arrivedAt };
      logger?.warn({ errorCode: failure.code, path }, 'webhook delivery refused');
      return { refused: refusal(failure.status ?? 401, failure.code, failure.message) };
    },

    tooLarge(): CoreResponse {
      const message = `Webhook bodies are limited to ${options.maxBodyBytes} bytes`;
      return refusal(413, 'PAYLOAD_TOO_LARGE', message);
    },

    busy(): CoreResponse {
      return refusal(
        503,
        'WEBHOOK_RECEIVER_BUSY',
        'Too many webhook bodies are being received at once; retry later',
        { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
      );
    },

    bodyTimeout(): CoreResponse {
      const message = `The webhook body did not arrive within ${options.bodyTimeoutMs} ms`;
      return refusal(408, 'WEBHOOK_BODY_TIMEOUT', message, { connection: 'close' });
    },

    /**
     * The verified event, or the refusal (401/400) when the bytes do not verify.
     * The timestamp is judged at `arrivedAt` (see `admitHeaders`): a delivery
     * admitted at the edge of the tolerance is not refused because its body
     * took a second to arrive, nor without the clock re-read it was admitted by.
     * A custom scheme's refusal for time is judged once more after a re-read.
     */
    async verify(
      raw: Buffer,
      headers: WebhookHeaders,
      path: string,
      arrivedAt: number,
    ): Promise<{ event: WebhookEvent } | { refused: CoreResponse }> {
      try {
        if (options.scheme === 'standard-webhooks') {
          return {
            event: verify(raw, headers, options.secrets, { ...check, nowSeconds: arrivedAt }),
          };
        }
        const scheme = options.scheme;
        const custom = (now: number) =>
          scheme({
            rawBody: raw,
            headers,
            secrets: options.secrets,
            headerNames: options.headers,
            toleranceSeconds: options.toleranceSeconds,
            nowSeconds: now,
          });
        try {
          return { event: await custom(arrivedAt) };
        } catch (err) {
          // As for the standard scheme's headers: a timestamp refused as out of tolerance is
          // judged once more after reading the platform's clock again (a fresh instance).
          if (
            !(err instanceof WebhookVerificationError) ||
            err.code !== TIMESTAMP_OUT_OF_TOLERANCE ||
            !(await deps.resyncClock?.())
          ) {
            throw err;
          }
          return { event: await custom(nowSeconds()) };
        }
      } catch (err) {
        const refused =
          err instanceof WebhookVerificationError
            ? err
            : new WebhookVerificationError(SIGNATURE_MISMATCH, 'The custom verifier refused it');
        logger?.warn({ errorCode: refused.code, path }, 'webhook delivery refused');
        return { refused: refusal(refused.status ?? 401, refused.code, refused.message) };
      }
    },

    /** Dedupe, handlers and purge, answered 200 or 202 at the ack deadline, 500/503 on failure. */
    async acknowledge(event: WebhookEvent): Promise<CoreResponse> {
      const work = deps.process(event).then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
      const first = await ackClock.race(work);
      if (first === 'timeout') {
        logger?.warn(
          { webhookId: event.id, topic: event.topic, ackTimeoutMs: options.ackTimeoutMs },
          'webhook handlers still running; acknowledged with 202',
        );
        // The platform already has its 2xx: a late failure can only be logged.
        void work.then((late) => {
          if ('error' in late) logFailure(logger, event, late.error, true);
        });
        return json(202, { status: 'accepted' });
      }
      if (!('error' in first)) return json(200, { status: first.outcome });
      if (first.error instanceof WebhookVerificationError) {
        return refusal(first.error.status ?? 400, first.error.code, first.error.message);
      }
      logFailure(logger, event, first.error, false);
      if (isStorageFailure(first.error)) {
        // Nothing was recorded: the platform retries (after Retry-After).
        return refusal(
          503,
          STORAGE_UNAVAILABLE,
          'The app could not reach its database; retry later',
          { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
        );
      }
      return refusal(
        500,
        WEBHOOK_HANDLER_FAILED,
        'The webhook could not be processed; retry later',
      );
    },
  };
}

export type WebhookDecisions = ReturnType<typeof createWebhookDecisions>;

/** How long a delivery whose body was consumed asks the platform to wait (a deploy's time). */
const BODY_CONSUMED_RETRY_AFTER_SECONDS = 300;

/**
 * What answers a delivery whose body something before the kit consumed, on Express
 * (the shell's `CoreBodyError('consumed')` carries its own shell's fix).
 */
export const BODY_ALREADY_CONSUMED_FIX =
  'a body parser mounted before kit.middleware() consumed the webhook body and kept no raw ' +
  'copy, so its signature cannot be checked. Fix: mount kit.middleware() before ' +
  'express.json(), or keep the bytes with express.json({ verify: keepRawBody }) ' +
  "(import { keepRawBody } from 'store-app-kit')";

/** The same on the Fetch shell: the request's body was read before `kit.fetch`. */
export const FETCH_BODY_CONSUMED_FIX =
  "the request's body was read before kit.fetch(request) (a body parser, c.req.json(), " +
  'request.json()), so the webhook signature cannot be checked over its bytes. Fix: hand ' +
  'the request to kit.fetch before anything reads its body';

/** The declared length of a body (`Content-Length`), or undefined. */
function declaredLength(req: CoreRequest): number | undefined {
  const raw = req.header('content-length');
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * The webhook receiver: one pipeline for both shells, over the request's
 * body-reading port (`req.body`, `req.refuseBody`). The order of its checks is
 * decided here once, cheapest and most telling first:
 *
 * 1. method (405) and content type (415): what the sender means to send;
 * 2. the Standard Webhooks headers, present, well-formed and fresh (400/401),
 *    before any body byte: an unsigned delivery is refused as unsigned, whatever
 *    its size, and costs no read;
 * 3. the declared length against `maxBodyBytes` (413);
 * 4. a reservation against `maxUnverifiedBytes` (503 + Retry-After);
 * 5. the read, up to `maxBodyBytes` within `bodyTimeoutMs` (413, 408, 400 aborted);
 * 6. the signature over the raw bytes (401), then dedupe, handlers and purge raced
 *    against the acknowledgement deadline (200, 202, 500, 503).
 *
 * Every refusal before the body is read asks the shell to refuse the body (drain a
 * small one, close the connection of a large one); the reservation is released
 * on every path once the bytes are verified or refused.
 */
export function createWebhookCore(deps: WebhookCoreDeps): CoreHandler {
  const { options, logger } = deps;
  const decide = createWebhookDecisions(deps);
  const reservations = { held: 0, max: options.maxUnverifiedBytes };
  let warnedConsumed = false;

  /** A refusal before the body is read: the shell gets rid of the body. */
  const early = (req: CoreRequest, r: CoreResponse): CoreResponse => {
    req.refuseBody();
    return r;
  };

  return async function webhookReceiver(req) {
    const headers = headersOf(req);
    const refused = decide.refuseRequest(req.method, req.header('content-type'));
    if (refused) return early(req, refused);
    const admitted = await decide.admitHeaders(headers, req.path);
    if ('refused' in admitted) return early(req, admitted.refused);
    const declared = declaredLength(req);
    if (declared !== undefined && declared > options.maxBodyBytes) {
      return early(req, decide.tooLarge());
    }
    // Reserve what the body may grow to before holding any of it.
    const reserved = declared ?? options.maxBodyBytes;
    if (reservations.held + reserved > reservations.max) return early(req, decide.busy());
    reservations.held += reserved;
    let verified: Awaited<ReturnType<WebhookDecisions['verify']>>;
    try {
      const body = await req.body(options.maxBodyBytes, options.bodyTimeoutMs);
      verified = await decide.verify(nodeBytes(body), headers, req.path, admitted.arrivedAt);
    } catch (err) {
      if (!(err instanceof CoreBodyError)) throw err;
      if (err.reason === 'consumed') {
        if (!warnedConsumed) {
          warnedConsumed = true;
          logger?.error(
            { errorCode: WEBHOOK_BODY_CONSUMED, path: req.path },
            `webhooks: ${err.message}`,
          );
        }
        // 503 + Retry-After, not 500 or 2xx: the delivery (an uninstall's purge among them)
        // stays the platform's to retry until the app is fixed (issue 32).
        return refusal(503, WEBHOOK_BODY_CONSUMED, `webhooks: ${err.message}`, {
          'retry-after': String(BODY_CONSUMED_RETRY_AFTER_SECONDS),
        });
      }
      return bodyRefusal(req, err, decide);
    } finally {
      // Verified or refused: either way these bytes no longer count as unverified.
      reservations.held -= reserved;
    }
    return 'refused' in verified ? verified.refused : decide.acknowledge(verified.event);
  };
}

/** The answer to a body that could not be read (413, 408, 400). */
function bodyRefusal(req: CoreRequest, err: CoreBodyError, decide: WebhookDecisions): CoreResponse {
  if (err.reason === 'too_large') {
    // The rest of the body is still coming: drained or cut off, never held.
    req.refuseBody();
    return decide.tooLarge();
  }
  if (err.reason === 'timeout') return decide.bodyTimeout();
  // The sender went away mid-body: nobody is left to read an answer.
  return refusal(400, 'WEBHOOK_BODY_ABORTED', 'The webhook body was cut off');
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
    unref(timer);
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

export function isJson(contentType: string | undefined): boolean {
  if (contentType === 'application/json') return true;
  if (typeof contentType !== 'string') return false;
  const media = contentType.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/json';
}

/**
 * The body as a Node `Buffer` (no copy) where the runtime has one, so
 * `event.rawBody` keeps Buffer's methods on Node, Bun and Deno; the bytes as
 * they are on Workers, which have no Buffer.
 */
function nodeBytes(body: Uint8Array): Buffer {
  const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;
  return (
    NodeBuffer ? NodeBuffer.from(body.buffer, body.byteOffset, body.byteLength) : body
  ) as Buffer;
}
