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
  WebhookVerificationError,
} from '../webhooks/errors.js';
import type { WebhookProcessor } from '../webhooks/handlers.js';
import type { ResolvedWebhookOptions } from '../webhooks/options.js';
import {
  BUSY_RETRY_AFTER_SECONDS,
  createAckClock,
  isJson,
  logFailure,
} from '../webhooks/receiver.js';
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

function refusal(status: number, code: string, message: string, headers = {}): CoreResponse {
  recordError('webhook', code);
  return json(status, { code, message }, headers);
}

/** The request's headers as the verifiers read them (by lower-case name). */
function headersOf(req: CoreRequest): WebhookHeaders {
  return new Proxy({} as Record<string, string | undefined>, {
    get: (_t, name) => (typeof name === 'string' ? req.header(name) : undefined),
  });
}

/** The webhook receiver as a core handler (the Fetch shell mounts it). */
export function createWebhookCore(deps: WebhookCoreDeps): CoreHandler {
  const { options, logger } = deps;
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const ackClock = createAckClock(options.ackTimeoutMs);
  const reservations = { held: 0, max: options.maxUnverifiedBytes };
  const check = { headers: options.headers, toleranceSeconds: options.toleranceSeconds };

  async function verifyBody(body: Uint8Array, headers: WebhookHeaders): Promise<WebhookEvent> {
    const raw = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    if (options.scheme === 'standard-webhooks') {
      return verify(raw, headers, options.secrets, { ...check, nowSeconds: nowSeconds() });
    }
    return options.scheme({
      rawBody: raw,
      headers,
      secrets: options.secrets,
      headerNames: options.headers,
      toleranceSeconds: options.toleranceSeconds,
      nowSeconds: nowSeconds(),
    });
  }

  return async function webhookReceiver(req) {
    const early = refuseEarly(req);
    if (early) return early;
    const headers = headersOf(req);
    const declared = Number(req.header('content-length'));
    // Reserve what the body may grow to before holding any of it.
    const reserved = Number.isFinite(declared) && declared >= 0 ? declared : options.maxBodyBytes;
    if (reservations.held + reserved > reservations.max) {
      return refusal(
        503,
        'WEBHOOK_RECEIVER_BUSY',
        'Too many webhook bodies are being received at once; retry later',
        { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS), connection: 'close' },
      );
    }
    reservations.held += reserved;
    let event: WebhookEvent;
    try {
      const body = await req.body(options.maxBodyBytes, options.bodyTimeoutMs);
      event = await verifyBody(body, headers);
    } catch (err) {
      return refuseBody(err, req.path);
    } finally {
      // Verified or refused: either way these bytes no longer count as unverified.
      reservations.held -= reserved;
    }
    return acknowledge(event);
  };

  /** What is refused on the request line and headers alone. */
  function refuseEarly(req: CoreRequest): CoreResponse | undefined {
    if (req.method !== 'POST') {
      return refusal(405, 'METHOD_NOT_ALLOWED', 'Webhooks are delivered with POST', {
        allow: 'POST',
      });
    }
    if (!isJson(req.header('content-type'))) {
      return refusal(
        415,
        'UNSUPPORTED_MEDIA_TYPE',
        'Webhook bodies must be Content-Type: application/json',
      );
    }
    const declared = Number(req.header('content-length'));
    if (Number.isFinite(declared) && declared > options.maxBodyBytes) return tooLarge();
    if (options.scheme !== 'standard-webhooks') return undefined;
    // Unsigned, stale or malformed: refused on its headers, before any body byte is held.
    try {
      checkDeliveryHeaders(headersOf(req), { ...check, nowSeconds: nowSeconds() });
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      logger?.warn({ errorCode: err.code, path: req.path }, 'webhook delivery refused');
      return refusal(err.status ?? 401, err.code, err.message);
    }
    return undefined;
  }

  function tooLarge(): CoreResponse {
    return refusal(
      413,
      'PAYLOAD_TOO_LARGE',
      `Webhook bodies are limited to ${options.maxBodyBytes} bytes`,
      { connection: 'close' },
    );
  }

  /** A body that could not be read or did not verify. */
  function refuseBody(err: unknown, path: string): CoreResponse {
    if (err instanceof CoreBodyError) {
      if (err.reason === 'too_large') return tooLarge();
      if (err.reason === 'timeout') {
        const message = `The webhook body did not arrive within ${options.bodyTimeoutMs} ms`;
        return refusal(408, 'WEBHOOK_BODY_TIMEOUT', message, { connection: 'close' });
      }
      return refusal(400, 'WEBHOOK_BODY_ABORTED', 'The webhook body was cut off');
    }
    const refused =
      err instanceof WebhookVerificationError
        ? err
        : new WebhookVerificationError(SIGNATURE_MISMATCH, 'The custom verifier refused it');
    logger?.warn({ errorCode: refused.code, path }, 'webhook delivery refused');
    return refusal(refused.status ?? 401, refused.code, refused.message);
  }

  /** Dedupe, handlers and purge, answered 200 or 202 at the ack deadline, 500/503 on failure. */
  async function acknowledge(event: WebhookEvent): Promise<CoreResponse> {
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
        {
          'retry-after': String(STORAGE_RETRY_AFTER_SECONDS),
        },
      );
    }
    return refusal(500, WEBHOOK_HANDLER_FAILED, 'The webhook could not be processed; retry later');
  }
}
