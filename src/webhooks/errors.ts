/**
 * Errors of webhook verification. Each code maps to one HTTP status the
 * receiver answers, so the sender learns whether a retry can help.
 */
import { StoreAppError } from '../errors/index.js';

/** A required header (id or timestamp) is absent. 400. */
export const MISSING_HEADERS = 'MISSING_HEADERS' as const;
/** A header value is malformed: not a number, too long, control characters. 400. */
export const INVALID_HEADERS = 'INVALID_HEADERS' as const;
/** The delivery carries no signature at all (unsigned). 401. */
export const MISSING_SIGNATURE = 'MISSING_SIGNATURE' as const;
/** The timestamp is more than the tolerance away from now, in either direction. 401. */
export const TIMESTAMP_OUT_OF_TOLERANCE = 'TIMESTAMP_OUT_OF_TOLERANCE' as const;
/** No signature matches any configured secret. 401. */
export const SIGNATURE_MISMATCH = 'SIGNATURE_MISMATCH' as const;
/** The signed body is not JSON, or lacks a string `type`. 400. */
export const INVALID_PAYLOAD = 'INVALID_PAYLOAD' as const;

export type WebhookVerificationCode =
  | typeof MISSING_HEADERS
  | typeof INVALID_HEADERS
  | typeof MISSING_SIGNATURE
  | typeof TIMESTAMP_OUT_OF_TOLERANCE
  | typeof SIGNATURE_MISMATCH
  | typeof INVALID_PAYLOAD;

const STATUS: Readonly<Record<WebhookVerificationCode, number>> = {
  MISSING_HEADERS: 400,
  INVALID_HEADERS: 400,
  MISSING_SIGNATURE: 401,
  TIMESTAMP_OUT_OF_TOLERANCE: 401,
  SIGNATURE_MISMATCH: 401,
  INVALID_PAYLOAD: 400,
};

/** A delivery was refused. Its `status` is the answer the receiver sends. */
export class WebhookVerificationError extends StoreAppError<WebhookVerificationCode> {
  constructor(code: WebhookVerificationCode, message: string) {
    super(code, message, { status: STATUS[code] });
  }
}

/**
 * A body parser mounted before `kit.middleware()` consumed the delivery's body and
 * kept no raw copy: the signature cannot be checked. 503 with `Retry-After`, so the
 * platform keeps the delivery (an uninstall's purge among them) and retries it once
 * the app is fixed; never a 2xx, which would drop it.
 */
export const WEBHOOK_BODY_CONSUMED = 'WEBHOOK_BODY_CONSUMED' as const;

/** An app handler (or the built-in purge) failed; the receiver answers 500 so the sender retries. */
export const WEBHOOK_HANDLER_FAILED = 'WEBHOOK_HANDLER_FAILED' as const;

export class WebhookHandlerError extends StoreAppError<typeof WEBHOOK_HANDLER_FAILED> {
  /** Topic of the delivery whose handler failed. */
  readonly topic: string;
  constructor(topic: string, cause: unknown) {
    super(WEBHOOK_HANDLER_FAILED, `A handler of the "${topic}" webhook failed`, {
      status: 500,
      cause,
    });
    this.topic = topic;
  }
}
