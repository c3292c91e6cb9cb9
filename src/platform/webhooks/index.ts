/**
 * Outbound webhooks: signed delivery, retries on the configured schedule and a
 * delivery log in the platform DB. Deliveries run in the background; nothing
 * here blocks the caller that enqueued them.
 */

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { eq } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { AppRegistry, RegisteredApp } from '../apps.js';
import { platformWebhookDeliveries } from '../db/auth-schema.js';
import type { PlatformDb } from '../db/index.js';
import { PLATFORM_TIMEOUT, PlatformError } from '../errors.js';
import { webhookHeaders } from './sign.js';

export interface DeliveryAttempt {
  /** ISO time of the attempt (real time). */
  at: string;
  /** HTTP status, when the receiver answered. */
  status?: number;
  /** Network error or timeout, when it did not. */
  error?: string;
  durationMs: number;
}

export interface Delivery {
  /** Also the `webhook-id` header, the same on every attempt. */
  id: string;
  appId: string;
  clientId: string | undefined;
  storeId: string;
  topic: string;
  url: string;
  payload: unknown;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: DeliveryAttempt[];
  /** When the next attempt is due, while pending. */
  nextAttemptAt: string | null;
  createdAt: string;
}

export interface WaitForDeliveriesOptions {
  clientId?: string;
  /** How many deliveries must exist and be settled (succeeded or failed). @default 1 */
  count?: number;
  /** Also resolve when the deliveries are pending with at least this many attempts each. @default undefined */
  attempts?: number;
  /** @default 5000 */
  timeoutMs?: number;
}

export interface WebhookDispatcher {
  enqueue(input: { app: RegisteredApp; storeId: string; topic: string; payload: unknown }): string;
  list(filter?: { clientId?: string }): Delivery[];
  waitFor(options?: WaitForDeliveriesOptions): Promise<Delivery[]>;
  close(): Promise<void>;
}

export function createWebhookDispatcher(deps: {
  db: PlatformDb;
  apps: AppRegistry;
  schedule: readonly number[];
  timeoutMs: number;
  logger: Logger | undefined;
  /** Fault injection: copies of each attempt to send (0 = drop it). @default () => 1 */
  copies?: () => number;
  /**
   * The platform's clock in Unix seconds, which deliveries are signed with
   * (as its answers' `Date` is: one clock, moved by advanceClock).
   * @default real time
   */
  nowSeconds?: () => number;
}): WebhookDispatcher {
  const { db, apps, schedule, timeoutMs, logger } = deps;
  const copiesOf = deps.copies ?? (() => 1);
  const timers = new Map<string, NodeJS.Timeout>();
  const inFlight = new Set<AbortController>();
  const running = new Set<Promise<void>>();
  const events = new EventEmitter();
  events.setMaxListeners(0);
  let closed = false;

  function toDelivery(row: typeof platformWebhookDeliveries.$inferSelect): Delivery {
    return {
      id: row.id,
      appId: row.appId,
      clientId: apps.byId(row.appId)?.clientId,
      storeId: row.storeId,
      topic: row.topic,
      url: row.url,
      payload: JSON.parse(row.body) as unknown,
      status: row.status,
      attempts: JSON.parse(row.attempts) as DeliveryAttempt[],
      nextAttemptAt: row.nextAttemptAt === null ? null : new Date(row.nextAttemptAt).toISOString(),
      createdAt: new Date(row.createdAt).toISOString(),
    };
  }

  async function attempt(id: string): Promise<void> {
    timers.delete(id);
    if (closed) return;
    const row = db
      .select()
      .from(platformWebhookDeliveries)
      .where(eq(platformWebhookDeliveries.id, id))
      .get();
    if (row?.status !== 'pending') return;
    const app = apps.byId(row.appId);
    if (!app) return;
    const attempts = JSON.parse(row.attempts) as DeliveryAttempt[];
    const started = Date.now();
    const controller = new AbortController();
    inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(new Error('timeout')), timeoutMs);
    let status: number | undefined;
    let error: string | undefined;
    const copies = copiesOf();
    const signedAt = deps.nowSeconds?.() ?? Math.floor(started / 1000);
    const headers = webhookHeaders(app.webhookSecret, row.id, signedAt, row.body);
    async function send(): Promise<number> {
      const res = await fetch(row!.url, {
        method: 'POST',
        headers,
        body: row!.body,
        redirect: 'manual',
        signal: controller.signal,
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status;
    }
    try {
      if (copies === 0) {
        error = 'dropped by fault injection';
      } else {
        // Copies (fault injection) go out at once, as a retrying sender racing itself would.
        const results = await Promise.allSettled(Array.from({ length: copies }, send));
        const statuses = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        status = statuses.find((s) => s >= 200 && s < 300) ?? statuses[0];
        const failure = results.find((r) => r.status === 'rejected');
        if (status === undefined && failure) throw failure.reason;
      }
    } catch (err) {
      error = controller.signal.aborted
        ? `no 2xx within ${timeoutMs} ms`
        : err instanceof Error
          ? ((err.cause as Error | undefined)?.message ?? err.message)
          : 'request failed';
    } finally {
      clearTimeout(timer);
      inFlight.delete(controller);
    }
    if (closed) return;
    attempts.push({
      at: new Date(started).toISOString(),
      ...(status === undefined ? {} : { status }),
      ...(error === undefined ? {} : { error }),
      durationMs: Date.now() - started,
    });
    const ok = status !== undefined && status >= 200 && status < 300;
    const delay = schedule[attempts.length - 1];
    const next = ok || delay === undefined ? null : Date.now() + delay * 1000;
    db.update(platformWebhookDeliveries)
      .set({
        attempts: JSON.stringify(attempts),
        status: ok ? 'succeeded' : next === null ? 'failed' : 'pending',
        nextAttemptAt: next,
      })
      .where(eq(platformWebhookDeliveries.id, id))
      .run();
    logger?.info(
      { deliveryId: id, topic: row.topic, attempt: attempts.length, status, error },
      ok ? 'webhook delivered' : 'webhook attempt failed',
    );
    if (next !== null && delay !== undefined) schedule1(id, delay * 1000);
    events.emit('change');
  }

  function schedule1(id: string, delayMs: number): void {
    if (closed) return;
    const t = setTimeout(() => {
      const p = attempt(id).finally(() => running.delete(p));
      running.add(p);
    }, delayMs);
    t.unref?.();
    timers.set(id, t);
  }

  // Pending deliveries from a previous run (file DB) resume where they stopped.
  for (const row of db
    .select()
    .from(platformWebhookDeliveries)
    .where(eq(platformWebhookDeliveries.status, 'pending'))
    .all()) {
    schedule1(row.id, Math.max(0, (row.nextAttemptAt ?? Date.now()) - Date.now()));
  }

  function list(filter: { clientId?: string } = {}): Delivery[] {
    const appId =
      filter.clientId === undefined ? undefined : apps.byClientId(filter.clientId)?.appId;
    if (filter.clientId !== undefined && appId === undefined) return [];
    const q = db.select().from(platformWebhookDeliveries);
    const rows =
      appId === undefined ? q.all() : q.where(eq(platformWebhookDeliveries.appId, appId)).all();
    return rows.sort((a, b) => a.createdAt - b.createdAt).map(toDelivery);
  }

  return {
    enqueue({ app, storeId, topic, payload }) {
      const id = `msg_${randomUUID()}`;
      const now = Date.now();
      db.insert(platformWebhookDeliveries)
        .values({
          id,
          appId: app.appId,
          storeId,
          topic,
          url: app.webhookUrl,
          body: JSON.stringify(payload),
          status: 'pending',
          attempts: '[]',
          nextAttemptAt: now,
          createdAt: now,
        })
        .run();
      schedule1(id, 0);
      events.emit('change');
      return id;
    },
    list,
    waitFor(options = {}) {
      const count = options.count ?? 1;
      const timeoutMs = options.timeoutMs ?? 5000;
      const filter = options.clientId === undefined ? {} : { clientId: options.clientId };
      const done = (): Delivery[] | undefined => {
        const all = list(filter);
        if (all.length < count) return undefined;
        const settled = all.every(
          (d) =>
            d.status !== 'pending' ||
            (options.attempts !== undefined && d.attempts.length >= options.attempts),
        );
        return settled ? all : undefined;
      };
      return new Promise((resolve, reject) => {
        const now = done();
        if (now) {
          resolve(now);
          return;
        }
        const onChange = () => {
          const r = done();
          if (r) {
            cleanup();
            resolve(r);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new PlatformError(
              PLATFORM_TIMEOUT,
              `waitForDeliveries: not settled within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          events.off('change', onChange);
        };
        events.on('change', onChange);
      });
    },
    async close() {
      closed = true;
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
      for (const c of inFlight) c.abort(new Error('platform closed'));
      await Promise.allSettled([...running]);
      events.removeAllListeners();
    },
  };
}
