/**
 * The typed shapes of webhook deliveries. Known topics get typed payloads;
 * any other topic arrives as `unknown` data and is acknowledged.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AnyDrizzle } from '../storage/types.js';

/** Payload of `app.uninstalled` (docs/platform-contract.md, Webhooks). */
export interface AppUninstalledPayload {
  type: 'app.uninstalled';
  /** ISO 8601 time of the uninstall. */
  timestamp: string;
  data: {
    store_id: string;
    app_id: string;
    client_id: string;
    /** ISO 8601 time of the uninstall; the purge skips installations newer than this. */
    uninstalled_at: string;
  };
}

/** Topic → payload of every topic the kit knows. Unknown topics use `GenericWebhookPayload`. */
export interface WebhookTopics {
  'app.uninstalled': AppUninstalledPayload;
}

/** The envelope every delivery shares: a string `type` and anything else. */
export interface GenericWebhookPayload {
  type: string;
  [key: string]: unknown;
}

/** A verified delivery. Only ever built from bytes whose signature matched. */
export interface WebhookEvent<P = GenericWebhookPayload> {
  /** The delivery id (`webhook-id`); the same on every retry, the dedupe key. */
  id: string;
  /** The payload's `type`, e.g. `app.uninstalled`. */
  topic: string;
  /** When the sender signed this attempt (`webhook-timestamp`). */
  timestamp: Date;
  /** The parsed JSON body. */
  payload: P;
  /** The exact bytes that were verified. */
  rawBody: Buffer;
}

/** Header names carrying the id, timestamp and signature. */
export interface WebhookHeaderNames {
  /** @default 'webhook-id' */
  id: string;
  /** @default 'webhook-timestamp' */
  timestamp: string;
  /** @default 'webhook-signature' */
  signature: string;
}

/** Request headers as Node gives them (lowercase names). */
export type WebhookHeaders = IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/** Everything a custom verifier is given. */
export interface WebhookVerifyInput {
  rawBody: Buffer;
  headers: WebhookHeaders;
  /** The configured secrets, as given (no `whsec_` check for custom schemes). */
  secrets: readonly string[];
  headerNames: WebhookHeaderNames;
  toleranceSeconds: number;
  /** Current time in Unix seconds. */
  nowSeconds: number;
}

/**
 * A custom signature scheme, for a platform that does not sign with Standard
 * Webhooks. Return the verified event or throw `WebhookVerificationError`
 * (any other error counts as SIGNATURE_MISMATCH: the handler never runs).
 */
export type WebhookVerifier = (input: WebhookVerifyInput) => WebhookEvent | Promise<WebhookEvent>;

/** What a handler receives besides the event. */
export interface WebhookHandlerContext {
  /**
   * The transaction that also records the delivery id: write through it and
   * your effects commit exactly once with the dedupe record, or not at all.
   */
  tx: AnyDrizzle;
}

export type WebhookHandler<P = GenericWebhookPayload> = (
  event: WebhookEvent<P>,
  context: WebhookHandlerContext,
) => Promise<void> | void;

export type { MinimalLogger } from '../core/logger.js';
