import { describe, expectTypeOf, it } from 'vitest';
import type {
  AppUninstalledPayload,
  GenericWebhookPayload,
  StoreAppKit,
  WebhookEvent,
} from '../../src/index.js';

describe('public webhook types', () => {
  it('types the payload of known topics and leaves others generic', () => {
    const on = (() => () => {}) as unknown as StoreAppKit['webhooks']['on'];
    on('app.uninstalled', (event) => {
      expectTypeOf(event).toEqualTypeOf<WebhookEvent<AppUninstalledPayload>>();
      expectTypeOf(event.payload.data.uninstalled_at).toBeString();
    });
    on('orders.created', (event) => {
      expectTypeOf(event.payload).toEqualTypeOf<GenericWebhookPayload>();
    });
    expectTypeOf(on('x', () => {})).toEqualTypeOf<() => void>();
  });

  it('returns purge counts from kit.purge', () => {
    expectTypeOf<ReturnType<StoreAppKit['purge']>>().resolves.toHaveProperty('counts');
    expectTypeOf<Parameters<StoreAppKit['purge']>[0]>().toBeString();
  });
});
