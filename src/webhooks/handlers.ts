/**
 * The handler registry (`kit.webhooks.on`) and the processor that runs a
 * verified event's handlers exactly once, with the built-in purge on
 * `app.uninstalled`.
 */
import type { PurgeOutbox } from '../purge/outbox.js';
import type { PendingPurgeRepository, WebhookRepository } from '../storage/types.js';
import { INVALID_PAYLOAD, WebhookHandlerError, WebhookVerificationError } from './errors.js';
import type { RecordGate } from './record-gate.js';
import type {
  AppUninstalledPayload,
  GenericWebhookPayload,
  MinimalLogger,
  WebhookEvent,
  WebhookHandler,
  WebhookTopics,
} from './types.js';

export interface WebhookRegistry {
  /**
   * Adds a handler for a topic; returns a function that removes it. Handlers
   * of one topic run in the order added, inside the transaction that records
   * the delivery id (so a redelivery does not run them again). A handler that
   * throws rolls that transaction back and the receiver answers 500, so the
   * platform retries. For `app.uninstalled` the kit's own purge runs after
   * your handlers.
   */
  on<T extends keyof WebhookTopics>(
    topic: T,
    handler: WebhookHandler<WebhookTopics[T]>,
  ): () => void;
  on(topic: string, handler: WebhookHandler): () => void;
  /** Topics that have at least one handler. */
  topics(): string[];
}

export interface WebhookRegistryInternal extends WebhookRegistry {
  handlersFor(topic: string): readonly WebhookHandler[];
}

export function createWebhookRegistry(): WebhookRegistryInternal {
  const byTopic = new Map<string, WebhookHandler[]>();
  return {
    on(topic: string, handler: WebhookHandler<never>) {
      if (typeof topic !== 'string' || topic.length === 0) {
        throw new TypeError('webhooks.on(topic, handler): topic must be a non-empty string');
      }
      if (typeof handler !== 'function') {
        throw new TypeError('webhooks.on(topic, handler): handler must be a function');
      }
      const list = byTopic.get(topic) ?? [];
      const h = handler as WebhookHandler;
      list.push(h);
      byTopic.set(topic, list);
      return function off() {
        const current = byTopic.get(topic);
        const at = current?.indexOf(h) ?? -1;
        if (current && at >= 0) current.splice(at, 1);
      };
    },
    topics() {
      return [...byTopic.entries()].filter(([, l]) => l.length > 0).map(([t]) => t);
    },
    handlersFor(topic) {
      return [...(byTopic.get(topic) ?? [])];
    },
  };
}

export type ProcessOutcome = 'processed' | 'duplicate' | 'ignored';

export type WebhookProcessor = (event: WebhookEvent) => Promise<ProcessOutcome>;

export const KNOWN_TOPICS: ReadonlySet<string> = new Set(['app.uninstalled']);

/**
 * Runs an event: the app's handlers and the delivery record in one
 * transaction (`runOnce`). For `app.uninstalled` the same transaction records
 * the pending purge (the outbox), so an acknowledged uninstall can never lose
 * its purge; the purge is then tried at once. When that attempt fails the
 * receiver answers 500 (the platform retries) and the outbox retries with
 * backoff as well; a redelivery of an event whose purge is still pending
 * tries it again (the store its first delivery recorded, whatever the
 * redelivered body says), one whose purge is done does nothing.
 */
export function createWebhookProcessor(deps: {
  webhooks: WebhookRepository;
  registry: WebhookRegistryInternal;
  pendingPurges: Pick<PendingPurgeRepository, 'list'>;
  outbox: Pick<PurgeOutbox, 'runNow'>;
  logger?: MinimalLogger;
  /**
   * Admits record transactions a pool's worth at a time, so a burst waits in
   * the gate rather than for a connection inside its storage deadline
   * (record-gate.ts). @default none: every record starts at once
   */
  recordGate?: RecordGate;
}): WebhookProcessor {
  const { webhooks, registry, pendingPurges, outbox, logger, recordGate } = deps;

  return async function processWebhook(event) {
    const handlers = registry.handlersFor(event.topic);
    const uninstall = event.topic === 'app.uninstalled' ? uninstallTarget(event) : undefined;
    if (event.topic === 'app.uninstalled' && !uninstall) {
      // Signed but unusable: a retry of the same bytes cannot succeed, so 400, not 500.
      throw new WebhookVerificationError(
        INVALID_PAYLOAD,
        'app.uninstalled payload lacks a valid data.store_id',
      );
    }
    if (handlers.length === 0 && !uninstall) {
      if (!KNOWN_TOPICS.has(event.topic)) {
        logger?.warn(
          { webhookId: event.id, topic: event.topic },
          'webhook topic has no handler; acknowledged',
        );
      }
      return 'ignored';
    }

    const record = () =>
      webhooks.runOnce(event.id, event.topic, async (tx, delivery) => {
        for (const handler of handlers) await handler(event, { tx });
        if (uninstall) {
          await delivery.addPendingPurge({
            eventId: event.id,
            storeId: uninstall.storeId,
            eventAt: uninstall.before,
          });
        }
      });
    let outcome: { duplicate: boolean };
    try {
      // Bounded only without app handlers: slow app handlers are what the 202 is for.
      outcome = await (recordGate ? recordGate.run(record, handlers.length === 0) : record());
    } catch (err) {
      throw new WebhookHandlerError(event.topic, err);
    }

    if (uninstall) {
      let done: boolean;
      try {
        if (outcome.duplicate) {
          // A redelivery only retries what the first delivery recorded (the
          // pending purge keyed by this id, with its store). Re-arming from the
          // redelivered body would let a second body under a known id purge
          // another store; a differing body is logged and changes nothing.
          const recorded = (await pendingPurges.list()).find((e) => e.eventId === event.id);
          if (recorded && recorded.storeId !== uninstall.storeId) {
            logger?.warn(
              { event: 'webhook.redelivery_mismatch', webhookId: event.id, topic: event.topic },
              'a redelivered webhook id names another store than its first delivery; only the first is acted on',
            );
          }
        } else {
          logger?.info(
            { event: 'purge.pending', storeId: uninstall.storeId, eventId: event.id },
            'uninstall recorded; purge pending',
          );
        }
        done = await outbox.runNow(event.id);
      } catch (err) {
        throw new WebhookHandlerError(event.topic, err);
      }
      if (!done) {
        throw new WebhookHandlerError(
          event.topic,
          new Error('the purge failed; it stays pending and is retried with backoff'),
        );
      }
    }
    return outcome.duplicate ? 'duplicate' : 'processed';
  };
}

/**
 * Store and cut-off of an uninstall. Without a parseable `uninstalled_at`
 * the signed delivery time stands in: still older than any reinstall that
 * happened after the platform sent it.
 */
function uninstallTarget(event: WebhookEvent): { storeId: string; before: Date } | undefined {
  const data = (event.payload as Partial<AppUninstalledPayload> & GenericWebhookPayload).data;
  const storeId = data && typeof data === 'object' ? data.store_id : undefined;
  // Control characters (NUL breaks Postgres text) or absurd lengths: refuse, do not query.
  if (typeof storeId !== 'string' || !/^[\x20-\x7e]{1,255}$/.test(storeId)) return undefined;
  const at = typeof data?.uninstalled_at === 'string' ? new Date(data.uninstalled_at) : undefined;
  const before = at && !Number.isNaN(at.getTime()) ? at : event.timestamp;
  return { storeId, before };
}
