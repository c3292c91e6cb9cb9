/**
 * The webhook receiver's decisions over a `CoreRequest`: method (405), content
 * type (415), signature headers before any body byte (401), declared and real
 * size (413), the bound on unverified bytes held (503 + Retry-After), the body
 * deadline (408), verification (401), then dedupe/handlers/purge raced against
 * the acknowledgement deadline (200, 202, 500, 503). Same statuses and bodies
 * as the Express receiver (src/webhooks/receiver.ts), which keeps its own
 * Node-stream glue (draining refused bodies, keep-alive) on its fast path.
 */
import {
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
} from '../webhooks/errors.js';
import type { WebhookProcessor } from '../webhooks/handlers.js';
import type { ResolvedWebhookOptions } from '../webhooks/options.js';
import type { MinimalLogger, WebhookEvent, WebhookHeaders } from '../webhooks/types.js';
import { checkDeliveryHeaders, verify } from '../webhooks/verify.js';
import { CoreBodyError, type CoreHandler, type CoreRequest, type CoreResponse } from './http.js';

export interface WebhookCoreDeps {
  options: ResolvedWebhookOptions;
  process: WebhookProcessor;
  logger?: MinimalLogger;
  /** Current time in Unix seconds (tests). */
  nowSeconds?: () => number;
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

    /** Standard Webhooks: unsigned, stale or malformed headers refused before any body byte. */
    refuseHeaders(headers: WebhookHeaders, path: string): CoreResponse | undefined {
      if (options.scheme !== 'standard-webhooks') return undefined;
      try {
        checkDeliveryHeaders(headers, { ...check, nowSeconds: nowSeconds() });
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        logger?.warn({ errorCode: err.code, path }, 'webhook delivery refused');
        return refusal(err.status ?? 401, err.code, err.message);
      }
      return undefined;
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

    /** The verified event, or the refusal (401/400) when the bytes do not verify. */
    async verify(
      raw: Buffer,
      headers: WebhookHeaders,
      path: string,
    ): Promise<{ event: WebhookEvent } | { refused: CoreResponse }> {
      try {
        if (options.scheme === 'standard-webhooks') {
          return {
            event: verify(raw, headers, options.secrets, { ...check, nowSeconds: nowSeconds() }),
          };
        }
        const event = await options.scheme({
          rawBody: raw,
          headers,
          secrets: options.secrets,
          headerNames: options.headers,
          toleranceSeconds: options.toleranceSeconds,
          nowSeconds: nowSeconds(),
        });
        return { event };
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

/** The webhook receiver as a core handler (the Fetch shell mounts it). */
export function createWebhookCore(deps: WebhookCoreDeps): CoreHandler {
  const { options } = deps;
  const decide = createWebhookDecisions(deps);
  const reservations = { held: 0, max: options.maxUnverifiedBytes };

  return async function webhookReceiver(req) {
    const headers = headersOf(req);
    const declared = Number(req.header('content-length'));
    const early =
      decide.refuseRequest(req.method, req.header('content-type')) ??
      (Number.isFinite(declared) && declared > options.maxBodyBytes
        ? decide.tooLarge()
        : undefined) ??
      decide.refuseHeaders(headers, req.path);
    if (early) return early;
    // Reserve what the body may grow to before holding any of it.
    const reserved = Number.isFinite(declared) && declared >= 0 ? declared : options.maxBodyBytes;
    if (reservations.held + reserved > reservations.max) return decide.busy();
    reservations.held += reserved;
    let verified: Awaited<ReturnType<WebhookDecisions['verify']>>;
    try {
      const body = await req.body(options.maxBodyBytes, options.bodyTimeoutMs);
      verified = await decide.verify(
        Buffer.from(body.buffer, body.byteOffset, body.byteLength),
        headers,
        req.path,
      );
    } catch (err) {
      if (!(err instanceof CoreBodyError)) throw err;
      if (err.reason === 'too_large') return decide.tooLarge();
      if (err.reason === 'timeout') return decide.bodyTimeout();
      return refusal(400, 'WEBHOOK_BODY_ABORTED', 'The webhook body was cut off');
    } finally {
      // Verified or refused: either way these bytes no longer count as unverified.
      reservations.held -= reserved;
    }
    return 'refused' in verified ? verified.refused : decide.acknowledge(verified.event);
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

export function isJson(contentType: string | undefined): boolean {
  if (contentType === 'application/json') return true;
  if (typeof contentType !== 'string') return false;
  const media = contentType.split(';', 1)[0]?.trim().toLowerCase();
  return media === 'application/json';
}
