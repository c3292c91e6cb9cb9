/**
 * The Fetch shell's request adapter: the body is read once, within its size
 * and time bounds, whatever the sender declares or trickles; query shapes
 * that the install routes refuse stay visible; cookies are written as the
 * Express shell writes them.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { unsignSessionCookie } from '../../src/core/browser-session.js';
import { CoreBodyError, type CoreSession } from '../../src/core/http.js';
import { serializeCookie, toCoreRequest, toResponse } from '../../src/shells/fetch/adapter.js';
import { storeApp } from '../../src/store-app.js';
import { sign } from '../../src/webhooks/verify.js';
import { offlineKitOptions } from '../helpers/config.js';

const session = {} as CoreSession;
const ctx = { remoteAddress: '203.0.113.9', log: pino({ level: 'silent' }), session };

function streamOf(chunks: string[], close = true): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const s of chunks) c.enqueue(new TextEncoder().encode(s));
      if (close) c.close();
    },
  });
}

function post(body: ReadableStream<Uint8Array> | string, headers: Record<string, string> = {}) {
  return new Request('http://app.test/webhooks?a=1', {
    method: 'POST',
    body,
    headers,
    duplex: 'half',
  } as RequestInit);
}

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CoreBodyError);
    return (err as CoreBodyError).reason;
  }
  return 'read';
}

describe('Fetch shell body bounds', () => {
  it('reads the bytes once: a second read gets the same bytes', async () => {
    const req = toCoreRequest(post(streamOf(['{"a":', '1}'])), ctx);
    const first = await req.body(100, 1000);
    expect(new TextDecoder().decode(first)).toBe('{"a":1}');
    expect(await req.body(100, 1000)).toBe(first);
  });

  it('attack: a declared Content-Length over the bound is refused before any byte is read', async () => {
    const req = toCoreRequest(post('x'.repeat(10), { 'content-length': '1000000' }), ctx);
    expect(await reason(req.body(100, 1000))).toBe('too_large');
  });

  it('attack: an undeclared (chunked) body is cut off as soon as it passes the bound', async () => {
    const req = toCoreRequest(post(streamOf(['x'.repeat(60), 'x'.repeat(60)])), ctx);
    expect(await reason(req.body(100, 1000))).toBe('too_large');
  });

  it('attack: a body that never finishes is abandoned at its deadline', async () => {
    const req = toCoreRequest(post(streamOf(['{"slow":'], false)), ctx);
    expect(await reason(req.body(100, 50))).toBe('timeout');
  });

  it('exposes repeated query keys (the install routes refuse them) and the caller-given address', () => {
    const req = toCoreRequest(new Request('http://app.test/auth?state=a&state=b&code=c'), ctx);
    expect(req.queryKeys()).toEqual(['state', 'code']);
    expect(req.queryAll('state')).toEqual(['a', 'b']);
    expect(req.remoteAddress).toBe('203.0.113.9');
  });
});

describe('a webhook body read before kit.fetch', () => {
  it('is the consumed reason, never a TypeError from a disturbed stream', async () => {
    const request = post('{"type":"test.ping"}', { 'content-type': 'application/json' });
    await request.text();
    expect(await reason(toCoreRequest(request, ctx).body(100, 1000))).toBe('consumed');
  });

  it('a signed delivery whose body the app read first answers 503 WEBHOOK_BODY_CONSUMED with the fix (the platform retries), not 500', async () => {
    const kit = await storeApp(
      offlineKitOptions({
        session: { secret: 's'.repeat(32) },
        logger: { instance: pino({ level: 'silent' }) },
      }),
    );
    try {
      const body = JSON.stringify({ type: 'test.ping', data: {} });
      const headers = sign(
        `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
        'msg_read_first',
        Math.floor(Date.now() / 1000),
        body,
      );
      const request = new Request('https://app.example.com/webhooks', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      await request.json(); // a parser (Hono's c.req.json()) before kit.fetch
      const res = (await kit.fetch(request, { remoteAddress: '203.0.113.9' }))!;
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      const answer = (await res.json()) as { code: string; message: string };
      expect(answer.code).toBe('WEBHOOK_BODY_CONSUMED');
      expect(answer.message).toContain('kit.fetch');
    } finally {
      await kit.close();
    }
  });
});

describe('Fetch shell responses and cookies', () => {
  it('a cleared cookie expires in 1970, as Express clears it; values are URI-encoded', () => {
    const base = { httpOnly: true, secure: true, sameSite: 'lax' as const, path: '/auth' };
    expect(serializeCookie({ ...base, name: 'p', value: '', maxAgeSeconds: 0 })).toContain(
      'Expires=Thu, 01 Jan 1970 00:00:00 GMT',
    );
    const set = serializeCookie({ ...base, name: 'sid', value: 's:a.b+c', maxAgeSeconds: 60 });
    expect(set).toMatch(
      /^sid=s%3Aa\.b%2Bc; Path=\/auth; Max-Age=60; Expires=.*; HttpOnly; Secure; SameSite=Lax$/,
    );
  });

  it('never carries a Connection header (the server owns it) and runs onClose once answered', () => {
    let closed = 0;
    const res = toResponse({
      status: 413,
      headers: { connection: 'close' },
      cookies: [],
      body: { kind: 'json', value: { code: 'PAYLOAD_TOO_LARGE' } },
      onClose: () => closed++,
    });
    expect(res.headers.get('connection')).toBeNull();
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(closed).toBe(1);
  });

  it('attack: a session cookie signed with another secret is no session', () => {
    expect(unsignSessionCookie('s:abc.forged', ['s'.repeat(32)])).toBeUndefined();
    expect(unsignSessionCookie('abc', ['s'.repeat(32)])).toBeUndefined();
  });
});
