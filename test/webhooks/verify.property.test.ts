import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verify, WebhookVerificationError } from '../../src/webhooks/index.js';
import { newSecret } from './fixtures.js';

const secret = newSecret();
const now = Math.floor(Date.now() / 1000);

function sign(id: string, body: string) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(now),
    'webhook-signature': new Webhook(secret).sign(id, new Date(now * 1000), body),
  };
}

const idArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const bodyArb = fc
  .record({ type: fc.string({ minLength: 1, maxLength: 30 }), data: fc.jsonValue() })
  .map((v) => JSON.stringify(v));

describe('verify, property-based', () => {
  it('accepts every delivery the reference library signs, and refuses any one-byte change', () => {
    fc.assert(
      fc.property(idArb, bodyArb, fc.nat(), fc.integer({ min: 1, max: 255 }), (id, body, at, x) => {
        const headers = sign(id, body);
        const raw = Buffer.from(body);
        expect(verify(raw, headers, [secret], { nowSeconds: now }).id).toBe(id);
        const mutated = Buffer.from(raw);
        const i = at % mutated.length;
        mutated[i] = (mutated[i] ?? 0) ^ x;
        expect(() => verify(mutated, headers, [secret], { nowSeconds: now })).toThrow(
          WebhookVerificationError,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('only ever throws WebhookVerificationError for arbitrary headers and bytes', () => {
    const header = fc.oneof(fc.string({ maxLength: 300 }), fc.array(fc.string(), { maxLength: 3 }));
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.record({
          'webhook-id': fc.option(header, { nil: undefined }),
          'webhook-timestamp': fc.option(header, { nil: undefined }),
          'webhook-signature': fc.option(header, { nil: undefined }),
        }),
        (bytes, headers) => {
          try {
            verify(Buffer.from(bytes), headers, [secret], { nowSeconds: now });
            expect.unreachable('an unsigned delivery was accepted');
          } catch (err) {
            expect(err).toBeInstanceOf(WebhookVerificationError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
