/**
 * The core webhook receiver (what the Fetch shell mounts) answers each case
 * with the Express receiver's status and code: verified and processed (200),
 * handlers past the acknowledgement deadline (202), a failing handler (500),
 * an unreachable database (503 + Retry-After), refusals before processing.
 */

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { CoreSession } from '../../src/core/http.js';
import { StorageError } from '../../src/errors/index.js';
import { toCoreRequest } from '../../src/shells/fetch/adapter.js';
import type { WebhookProcessor } from '../../src/webhooks/handlers.js';
import { resolveWebhookOptions } from '../../src/webhooks/options.js';
import { createWebhookCore } from '../../src/webhooks/pipeline.js';
import { newSecret, signDelivery } from '../webhooks/fixtures.js';

const secret = newSecret();
const ctx = {
  remoteAddress: undefined,
  log: pino({ level: 'silent' }),
  session: {} as CoreSession,
};

function receiver(process: WebhookProcessor, ackTimeoutMs = 5000) {
  return createWebhookCore({
    options: resolveWebhookOptions({ secrets: [secret], ackTimeoutMs }, {}),
    process,
  });
}

function delivery(headers: Record<string, string> = {}) {
  const d = signDelivery(secret, { type: 'test.ping' });
  return toCoreRequest(
    new Request('http://app.test/webhooks', {
      method: 'POST',
      headers: { ...d.headers, ...headers },
      body: d.body,
    }),
    ctx,
  );
}

describe('core webhook receiver', () => {
  it('a verified delivery is processed and answered 200 with its outcome', async () => {
    const seen: string[] = [];
    const r = await receiver(async (e) => {
      seen.push(e.topic);
      return 'processed';
    })(delivery());
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ kind: 'text', value: '{"status":"processed"}' });
    expect(seen).toEqual(['test.ping']);
  });

  it('handlers past ackTimeoutMs: 202, and they keep running', async () => {
    let finish!: () => void;
    const running = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const r = await receiver(async () => {
      await running;
      return 'processed';
    }, 10)(delivery());
    expect(r.status).toBe(202);
    finish();
  });

  it('a failing handler is a 500 (the platform retries); an unreachable database a 503 with Retry-After', async () => {
    const failed = await receiver(async () => {
      throw new Error('boom');
    })(delivery());
    expect(failed.status).toBe(500);
    expect(JSON.stringify(failed.body)).not.toContain('boom');
    const down = await receiver(async () => {
      throw new StorageError('db down');
    })(delivery());
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBeTruthy();
  });

  it('refusals never run the handlers: wrong type, tampered signature', async () => {
    let ran = 0;
    const r = receiver(async () => {
      ran++;
      return 'processed';
    });
    expect((await r(delivery({ 'content-type': 'text/plain' }))).status).toBe(415);
    expect((await r(delivery({ 'webhook-signature': 'v1,AAAA' }))).status).toBe(401);
    expect(ran).toBe(0);
  });

  it('the order of checks: an unsigned delivery declaring 100 MiB is refused as unsigned, its body refused unread', async () => {
    let refused = 0;
    let read = 0;
    const req = {
      ...delivery({ 'content-length': String(100 * 1024 * 1024) }),
      // The shell's body port: the pipeline never reads, it asks the shell to refuse.
      body: async () => {
        read++;
        return new Uint8Array(0);
      },
      refuseBody: () => {
        refused++;
      },
    };
    const unsigned = new Proxy(req, {
      get: (t, k) =>
        k === 'header'
          ? (name: string) => (name.startsWith('webhook-') ? undefined : t.header(name))
          : t[k as keyof typeof t],
    });
    const r = await receiver(async () => 'processed')(unsigned);
    expect(r.status).toBe(400);
    expect(JSON.parse((r.body as { value: string }).value).code).toBe('MISSING_HEADERS');
    expect(refused).toBe(1);
    expect(read).toBe(0);
    // Signed, the same declared size is refused for its size, still unread.
    const signed = await receiver(async () => 'processed')(req);
    expect(signed.status).toBe(413);
    expect(refused).toBe(2);
    expect(read).toBe(0);
  });
});
