import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { CONFIG_INVALID, StoreAppError } from '../../src/errors/index.js';
import {
  INVALID_HEADERS,
  INVALID_PAYLOAD,
  MISSING_HEADERS,
  MISSING_SIGNATURE,
  resolveWebhookOptions,
  SIGNATURE_MISMATCH,
  sign,
  TIMESTAMP_OUT_OF_TOLERANCE,
  verify,
  verifySignature,
  WebhookVerificationError,
} from '../../src/webhooks/index.js';
import { newSecret, signDelivery } from './fixtures.js';

const secret = newSecret();
const payload = { type: 'app.uninstalled', data: { store_id: 's1' } };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).code;
  }
  return undefined;
}

function flipByte(s: string, at: number): string {
  const b = Buffer.from(s);
  b[at] = (b[at] ?? 0) ^ 0x01;
  return b.toString('latin1');
}

describe('verify (Standard Webhooks)', () => {
  it('accepts a delivery signed by the standardwebhooks reference library', () => {
    const d = signDelivery(secret, payload);
    const event = verify(Buffer.from(d.body), d.headers, [secret]);
    expect(event.id).toBe(d.id);
    expect(event.topic).toBe('app.uninstalled');
    expect(event.payload).toEqual(payload);
    expect(event.timestamp.getTime()).toBe(Number(d.headers['webhook-timestamp']) * 1000);
    expect(event.rawBody.equals(Buffer.from(d.body))).toBe(true);
  });

  it('produces signatures the reference library accepts (sign helper)', () => {
    const body = JSON.stringify(payload);
    const now = Math.floor(Date.now() / 1000);
    const headers = sign(secret, 'msg_1', now, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(payload);
  });

  it('refuses a body, id or timestamp with one byte flipped', () => {
    const d = signDelivery(secret, payload);
    for (let i = 0; i < d.body.length; i += 7) {
      expect(
        codeOf(() => verify(Buffer.from(flipByte(d.body, i), 'latin1'), d.headers, [secret])),
      ).toBe(SIGNATURE_MISMATCH);
    }
    const badId = { ...d.headers, 'webhook-id': flipByte(d.headers['webhook-id']!, 4) };
    expect(codeOf(() => verify(Buffer.from(d.body), badId, [secret]))).toBe(SIGNATURE_MISMATCH);
    const ts = Number(d.headers['webhook-timestamp']);
    const badTs = { ...d.headers, 'webhook-timestamp': String(ts - 1) };
    expect(codeOf(() => verify(Buffer.from(d.body), badTs, [secret]))).toBe(SIGNATURE_MISMATCH);
  });

  it('refuses a signature made with another secret', () => {
    const d = signDelivery(newSecret(), payload);
    expect(codeOf(() => verify(Buffer.from(d.body), d.headers, [secret]))).toBe(SIGNATURE_MISMATCH);
  });

  it('refuses stale and future timestamps beyond 5 minutes, accepts within', () => {
    const now = Math.floor(Date.now() / 1000);
    for (const [offset, ok] of [
      [-301, false],
      [301, false],
      [-299, true],
      [299, true],
    ] as const) {
      const d = signDelivery(secret, payload, { at: new Date((now + offset) * 1000) });
      const code = codeOf(() =>
        verify(Buffer.from(d.body), d.headers, [secret], { nowSeconds: now }),
      );
      expect(code).toBe(ok ? undefined : TIMESTAMP_OUT_OF_TOLERANCE);
    }
  });

  it('honours a configured tolerance', () => {
    const now = Math.floor(Date.now() / 1000);
    const d = signDelivery(secret, payload, { at: new Date((now - 20) * 1000) });
    expect(
      codeOf(() =>
        verify(Buffer.from(d.body), d.headers, [secret], { nowSeconds: now, toleranceSeconds: 10 }),
      ),
    ).toBe(TIMESTAMP_OUT_OF_TOLERANCE);
  });

  it('names missing id/timestamp as MISSING_HEADERS and a missing signature as MISSING_SIGNATURE', () => {
    const d = signDelivery(secret, payload);
    const body = Buffer.from(d.body);
    const without = (name: string) =>
      Object.fromEntries(Object.entries(d.headers).filter(([k]) => k !== name));
    expect(codeOf(() => verify(body, without('webhook-id'), [secret]))).toBe(MISSING_HEADERS);
    expect(codeOf(() => verify(body, without('webhook-timestamp'), [secret]))).toBe(
      MISSING_HEADERS,
    );
    expect(codeOf(() => verify(body, without('webhook-signature'), [secret]))).toBe(
      MISSING_SIGNATURE,
    );
    expect(codeOf(() => verify(body, { ...d.headers, 'webhook-signature': '' }, [secret]))).toBe(
      MISSING_SIGNATURE,
    );
  });

  it('accepts any matching signature among several, and any of several secrets (rotation)', () => {
    const oldSecret = newSecret();
    const d = signDelivery(oldSecret, payload);
    const other = signDelivery(secret, payload, { id: 'unrelated' }).headers['webhook-signature'];
    const headers = {
      ...d.headers,
      'webhook-signature': `v1a,xyz ${other} ${d.headers['webhook-signature']}`,
    };
    expect(verify(Buffer.from(d.body), headers, [secret, oldSecret]).id).toBe(d.id);
    expect(codeOf(() => verify(Buffer.from(d.body), headers, [secret]))).toBe(SIGNATURE_MISMATCH);
  });

  it('ignores signatures of other versions or wrong length', () => {
    const d = signDelivery(secret, payload);
    const mac = d.headers['webhook-signature']!.slice(3);
    for (const sig of [`v2,${mac}`, `v1,${mac.slice(0, 20)}`, mac, `v1,`]) {
      expect(
        codeOf(() =>
          verify(Buffer.from(d.body), { ...d.headers, 'webhook-signature': sig }, [secret]),
        ),
      ).toBe(SIGNATURE_MISMATCH);
    }
  });

  it('refuses a candidate holding the right MAC followed by more bytes', () => {
    const d = signDelivery(secret, payload);
    const mac = Buffer.from(d.headers['webhook-signature']!.slice(3), 'base64');
    for (const extra of [Buffer.from([0]), Buffer.from('trailing bytes')]) {
      const longer = `v1,${Buffer.concat([mac, extra]).toString('base64')}`;
      expect(
        codeOf(() =>
          verify(Buffer.from(d.body), { ...d.headers, 'webhook-signature': longer }, [secret]),
        ),
      ).toBe(SIGNATURE_MISMATCH);
    }
  });

  it('carries nothing over from an accepted delivery to the next call', () => {
    const d = signDelivery(secret, payload);
    const body = Buffer.from(d.body);
    const mac = Buffer.from(d.headers['webhook-signature']!.slice(3), 'base64');
    expect(verifySignature(body, d.headers, [secret]).id).toBe(d.id);
    // Shorter candidates decode over the bytes the accepted call compared.
    for (const short of [mac.subarray(0, 31), mac.subarray(0, 1), Buffer.alloc(0)]) {
      const headers = { ...d.headers, 'webhook-signature': `v1,${short.toString('base64')}` };
      expect(codeOf(() => verifySignature(body, headers, [secret]))).toBe(SIGNATURE_MISMATCH);
    }
  });

  it('refuses header injection, absurd lengths and repeated headers as INVALID_HEADERS', () => {
    const d = signDelivery(secret, payload);
    const body = Buffer.from(d.body);
    const cases: Record<string, string | string[]>[] = [
      { 'webhook-id': 'msg\r\nx-evil: 1' },
      { 'webhook-id': 'a'.repeat(10_000) },
      { 'webhook-timestamp': '12a' },
      { 'webhook-timestamp': '-5' },
      { 'webhook-timestamp': '9'.repeat(40) },
      { 'webhook-signature': `${d.headers['webhook-signature']}\nv1,x` },
      { 'webhook-signature': `v1,${'A'.repeat(5000)}` },
      { 'webhook-id': [d.id, d.id] },
    ];
    for (const override of cases) {
      expect(codeOf(() => verify(body, { ...d.headers, ...override }, [secret]))).toBe(
        INVALID_HEADERS,
      );
    }
  });

  it('checks the signature before parsing: a signed non-JSON body is INVALID_PAYLOAD', () => {
    for (const body of ['not json', '{"type":', '[1,2]', '{"no":"type"}', '{"type":""}']) {
      const d = signDelivery(secret, body);
      expect(codeOf(() => verify(Buffer.from(d.body), d.headers, [secret]))).toBe(INVALID_PAYLOAD);
      const unsigned = signDelivery(newSecret(), body);
      expect(codeOf(() => verify(Buffer.from(body), unsigned.headers, [secret]))).toBe(
        SIGNATURE_MISMATCH,
      );
    }
  });

  it('reads custom header names', () => {
    const d = signDelivery(secret, payload);
    const headers = {
      'x-id': d.headers['webhook-id']!,
      'x-ts': d.headers['webhook-timestamp']!,
      'x-sig': d.headers['webhook-signature']!,
    };
    const event = verify(Buffer.from(d.body), headers, [secret], {
      headers: { id: 'x-id', timestamp: 'x-ts', signature: 'x-sig' },
    });
    expect(event.id).toBe(d.id);
  });

  it('maps each refusal to the status the receiver sends', () => {
    expect(new WebhookVerificationError(SIGNATURE_MISMATCH, 'x').status).toBe(401);
    expect(new WebhookVerificationError(MISSING_HEADERS, 'x').status).toBe(400);
    expect(new WebhookVerificationError(MISSING_SIGNATURE, 'x')).toBeInstanceOf(StoreAppError);
  });
});

describe('resolveWebhookOptions', () => {
  const configCode = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return { code: (err as StoreAppError).code, message: (err as Error).message };
    }
    return undefined;
  };

  it('fills the documented defaults and reads comma-separated secrets from the environment', () => {
    const a = newSecret();
    const b = newSecret();
    const r = resolveWebhookOptions({}, { STORE_APP_WEBHOOK_SECRET: ` ${a}, ${b} ` });
    expect(r).toMatchObject({
      path: '/webhooks',
      scheme: 'standard-webhooks',
      headers: { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' },
      toleranceSeconds: 300,
      maxBodyBytes: 1_048_576,
      ackTimeoutMs: 5000,
      dedupeRetentionHours: 720,
    });
    expect(r.secrets).toEqual([a, b]);
  });

  it('lets options win over the environment', () => {
    const a = newSecret();
    const r = resolveWebhookOptions({ secrets: [a] }, { STORE_APP_WEBHOOK_SECRET: newSecret() });
    expect(r.secrets).toEqual([a]);
  });

  it('refuses a missing or malformed secret without echoing it', () => {
    expect(configCode(() => resolveWebhookOptions({}, {}))?.code).toBe(CONFIG_INVALID);
    const bad = 'sk_live_do_not_print_me';
    const err = configCode(() => resolveWebhookOptions({ secrets: bad }, {}));
    expect(err?.code).toBe(CONFIG_INVALID);
    expect(err?.message).not.toContain(bad);
    expect(configCode(() => resolveWebhookOptions({ secrets: 'whsec_!!!' }, {}))?.code).toBe(
      CONFIG_INVALID,
    );
  });

  it('accepts any secret with a custom scheme', () => {
    const r = resolveWebhookOptions({ secrets: 'plain', scheme: () => ({}) as never }, {});
    expect(r.secrets).toEqual(['plain']);
  });

  it('refuses bad paths, header names and numbers', () => {
    const s = newSecret();
    for (const bad of [
      { path: 'webhooks' },
      { headers: { id: 'bad header' } },
      { headers: { id: 'webhook-signature' } },
      { toleranceSeconds: -1 },
      { maxBodyBytes: 1.5 },
      { ackTimeoutMs: 0 },
      { dedupeRetentionHours: 1 },
      { scheme: 'hmac' as never },
    ]) {
      expect(configCode(() => resolveWebhookOptions({ ...bad, secrets: s }, {}))?.code).toBe(
        CONFIG_INVALID,
      );
    }
  });
});

describe('verifySignature (bytes only)', () => {
  it('vouches for id and time without parsing; verify still refuses the unparsable body', () => {
    const d = signDelivery(secret, 'not json at all');
    const at = Math.floor(Date.now() / 1000);
    expect(verifySignature(Buffer.from(d.body), d.headers, [secret])).toEqual({
      id: d.id,
      timestampSeconds: Number(d.headers['webhook-timestamp']),
    });
    expect(Math.abs(Number(d.headers['webhook-timestamp']) - at)).toBeLessThanOrEqual(1);
    expect(codeOf(() => verify(Buffer.from(d.body), d.headers, [secret]))).toBe(INVALID_PAYLOAD);
  });

  it('refuses a changed byte, and keeps refusing after a secret was seen before (key cache)', () => {
    const other = newSecret();
    const d = signDelivery(secret, payload);
    expect(verifySignature(Buffer.from(d.body), d.headers, [secret]).id).toBe(d.id);
    expect(codeOf(() => verifySignature(Buffer.from(d.body), d.headers, [other]))).toBe(
      SIGNATURE_MISMATCH,
    );
    expect(
      codeOf(() => verifySignature(Buffer.from(flipByte(d.body, 3)), d.headers, [secret])),
    ).toBe(SIGNATURE_MISMATCH);
    expect(verifySignature(Buffer.from(d.body), d.headers, [other, secret]).id).toBe(d.id);
  });
});
