/**
 * The webhooks module as the kit composes it: registry (`kit.webhooks`),
 * processor (dedupe + handlers + purge) and the receiver pipeline
 * (./pipeline.ts) the route table mounts at `options.path` on both shells.
 */
import type { CoreHandler } from '../core/http.js';
import type { PurgeFunction } from '../purge/index.js';
import { createPurgeOutbox, type PurgeOutbox } from '../purge/outbox.js';
import type { Storage } from '../storage/types.js';
import { ATTR, annotateActive } from '../telemetry/index.js';
import {
  createWebhookProcessor,
  createWebhookRegistry,
  type WebhookProcessor,
  type WebhookRegistry,
} from './handlers.js';
import type { ResolvedWebhookOptions } from './options.js';
import { createWebhookCore } from './pipeline.js';
import { recordGateFor } from './record-gate.js';
import type { MinimalLogger } from './types.js';

export * from './errors.js';
export type { ProcessOutcome, WebhookProcessor, WebhookRegistry } from './handlers.js';
export {
  type ResolvedWebhookOptions,
  resolveWebhookOptions,
  WEBHOOK_DEFAULTS,
  WEBHOOK_SECRET_ENV,
  type WebhookOptions,
} from './options.js';
export { BODY_ALREADY_CONSUMED_FIX, createWebhookCore } from './pipeline.js';
export { keepRawBody } from './raw-body.js';
export type * from './types.js';
export {
  parsePayload,
  sign,
  type VerifiedDelivery,
  type VerifyOptions,
  verify,
  verifySignature,
} from './verify.js';

const PRUNE_EVERY_MS = 3_600_000;

export interface KitWebhooks {
  /** `kit.webhooks`: register handlers. */
  api: WebhookRegistry;
  /** The receiver pipeline, a core handler (the route table mounts it at `path`). */
  handler: CoreHandler;
  /** Dedupe, handlers and purge of a verified event (the Fetch shell's receiver calls it). */
  process: WebhookProcessor;
  path: string;
}

export function createWebhooks(deps: {
  storage: Pick<Storage, 'webhooks' | 'pendingPurges'>;
  options: ResolvedWebhookOptions;
  purge: PurgeFunction;
  /**
   * The purge outbox worker (the kit passes its started one). @default one
   * built here that only works purges when deliveries arrive
   */
  outbox?: PurgeOutbox;
  logger?: MinimalLogger;
  /** The platform's time in Unix seconds (see WebhookCoreDeps.nowSeconds). */
  nowSeconds?: () => number;
  /** Read the platform's clock again (see WebhookCoreDeps.resyncClock). */
  resyncClock?: () => Promise<boolean>;
  /**
   * The pool the delivery records share, on Postgres/MySQL: records are then
   * admitted at most `poolMax` at a time, waiting at most
   * `ackTimeoutMs - storageTimeoutMs` (record-gate.ts). @default no gate
   * (SQLite, whose deliveries share one COMMIT; custom adapters)
   */
  recordPool?: { poolMax: number; storageTimeoutMs: number };
  /**
   * Hands each delivery's processing to whoever must wait for it: a delivery
   * answered 202 keeps running, and a shutdown finishes it before storage
   * closes (src/core/drain.ts). @default none
   */
  track?: <T>(work: Promise<T>) => Promise<T>;
}): KitWebhooks {
  const { storage, options, purge, logger } = deps;
  const registry = createWebhookRegistry();
  const outbox =
    deps.outbox ??
    createPurgeOutbox({
      pendingPurges: storage.pendingPurges,
      purge,
      ...(logger ? { logger } : {}),
    });
  const processEvent = createWebhookProcessor({
    webhooks: storage.webhooks,
    registry,
    pendingPurges: storage.pendingPurges,
    outbox,
    ...(logger ? { logger } : {}),
    ...(deps.recordPool
      ? { recordGate: recordGateFor({ ...deps.recordPool, ackTimeoutMs: options.ackTimeoutMs }) }
      : {}),
  });
  const nowMs = deps.nowSeconds ? () => deps.nowSeconds!() * 1000 : Date.now;
  let lastPrune = 0;
  // Pruning rides on deliveries (at most hourly) so the kit needs no timer to stop.
  const processAndPrune: WebhookProcessor = async (event) => {
    const outcome = await processEvent(event);
    annotateActive(() => ({
      [ATTR.webhookTopic]: event.topic,
      [ATTR.webhookId]: event.id,
      [ATTR.outcome]: outcome,
    }));
    const now = nowMs();
    if (now - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = now;
      const before = new Date(now - options.dedupeRetentionHours * 3_600_000);
      storage.webhooks.pruneDeliveries(before).then(
        (pruned) => {
          if (pruned > 0) logger?.info({ pruned }, 'old webhook delivery ids pruned');
        },
        (err: unknown) => logger?.warn({ err }, 'pruning webhook delivery ids failed'),
      );
    }
    return outcome;
  };
  const track = deps.track;
  const processTracked: WebhookProcessor = track
    ? (event) => track(processAndPrune(event))
    : processAndPrune;
  const handler = createWebhookCore({
    options,
    process: processTracked,
    ...(logger ? { logger } : {}),
    ...(deps.nowSeconds ? { nowSeconds: deps.nowSeconds } : {}),
    ...(deps.resyncClock ? { resyncClock: deps.resyncClock } : {}),
  });
  const api: WebhookRegistry = {
    on: registry.on.bind(registry) as WebhookRegistry['on'],
    topics: registry.topics.bind(registry),
  };
  return { api, handler, process: processTracked, path: options.path };
}
