/**
 * The kit's security-header set is decided once (src/core/security-headers.ts) and is
 * the same on both shells: equal to what helmet sends under the kit's configuration,
 * set by the Express shell on routes behind `kit.authenticated()`, and by
 * `kit.secureResponse(request, response)` on a Fetch app's own routes, keeping the
 * headers the app set itself.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kitHeaderSet } from '../../src/core/security-headers.js';
import { generateKey } from '../../src/crypto/index.js';
import type { StoreAppKit } from '../../src/kit.js';
import { storeApp } from '../../src/store-app.js';

const admin = 'https://admin.example';

/** What helmet sets under the kit's configuration (as the kit configured it before issue 31). */
function helmetSet(embedded: boolean, https: boolean, framing: 'protected' | 'unprotected') {
  const protect = framing === 'protected';
  const h = helmet({
    contentSecurityPolicy: {
      directives: {
        ...(https ? {} : { upgradeInsecureRequests: null }),
        frameAncestors: protect ? (embedded ? [admin] : ["'none'"]) : null,
      },
    },
    xFrameOptions: embedded || !protect ? false : { action: 'deny' },
  });
  const set: Array<[string, string]> = [];
  const removed: string[] = [];
  h(
    {} as never,
    {
      setHeader: (n: string, v: string) => set.push([n.toLowerCase(), String(v)]),
      removeHeader: (n: string) => removed.push(n.toLowerCase()),
    } as never,
    () => {},
  );
  return { set, removed };
}

describe('the kit’s header set', () => {
  it.each([
    [true, true, 'protected'],
    [false, true, 'protected'],
    [true, false, 'protected'],
    [false, false, 'unprotected'],
  ] as const)(
    'embedded %s, https %s, framing %s: what helmet sends',
    (embedded, https, framing) => {
      const ours = kitHeaderSet({
        embedded: { enabled: embedded, adminOrigin: admin },
        framing,
        https,
      });
      const theirs = helmetSet(embedded, https, framing);
      expect(ours.document).toEqual(theirs.set);
      expect(ours.removed).toEqual(theirs.removed);
    },
  );
});

describe('one set on both shells', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-headers-'));
  let kit: StoreAppKit;
  beforeAll(async () => {
    kit = (await storeApp({
      appUrl: 'https://app.example',
      environment: 'test',
      oauth: {
        clientId: 'c',
        clientSecret: randomBytes(24).toString('base64url'),
        scopes: ['read_products'],
        authUrl: 'http://127.0.0.1:9',
      },
      storage: { databaseUrl: join(dir, 'app.db'), encryptionKeys: [generateKey()] },
      session: { secret: randomBytes(32).toString('base64url') },
      webhooks: { secrets: [`whsec_${randomBytes(32).toString('base64')}`] },
      refresh: { sweepIntervalMs: 0 },
      embedded: { adminOrigin: admin },
    })) as StoreAppKit;
  });
  afterAll(async () => {
    await kit?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The headers an Express route behind kit.authenticated() gets (answered by the kit's 401). */
  async function viaExpress(headers: Record<string, string>) {
    const app = express();
    app.use(kit.middleware());
    app.get('/api/notes', kit.authenticated(), (_req, res) => res.json({}));
    const res = await request(app).get('/api/notes').set(headers);
    return res.headers as Record<string, string>;
  }

  const NAMES = [
    'content-security-policy',
    'cross-origin-opener-policy',
    'referrer-policy',
    'strict-transport-security',
    'x-content-type-options',
    'vary',
  ];
  const pick = (get: (name: string) => string | null | undefined) =>
    Object.fromEntries(NAMES.map((n) => [n, get(n) ?? null]));

  it('a page of the app gets the document set, as a route behind kit.authenticated() does', async () => {
    const req = new Request('https://app.example/', { headers: { accept: 'text/html' } });
    const page = kit.secureResponse(req, new Response('<p>notes</p>'));
    const express = await viaExpress({ accept: 'application/json' });
    expect(pick((n) => page.headers.get(n))).toEqual({
      ...pick((n) => express[n]),
      // The kit's 401 itself is never cached by a proxy (a page is the app's to decide).
      vary: null,
    });
    expect(page.headers.get('content-security-policy')).toContain(`frame-ancestors ${admin}`);
    expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('an API call with a bearer token gets nosniff, HSTS and Vary: Authorization only', async () => {
    const req = new Request('https://app.example/api/notes', {
      headers: { authorization: 'Bearer t' },
    });
    const api = kit.secureResponse(
      req,
      Response.json({ data: [] }, { headers: { vary: 'Origin' } }),
    );
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
    expect(api.headers.get('strict-transport-security')).toBeTruthy();
    expect(api.headers.get('vary')).toBe('Origin, Authorization');
    expect(api.headers.get('content-security-policy')).toBeNull();
    const express = await viaExpress({ authorization: 'Bearer t' });
    expect(express['vary']).toContain('Authorization');
    expect(express['content-security-policy']).toBeUndefined();
  });

  it('keeps the headers the app set itself, and copies a response whose headers are immutable', async () => {
    const req = new Request('https://app.example/');
    const own = new Response('x', { headers: { 'content-security-policy': "default-src 'none'" } });
    expect(kit.secureResponse(req, own).headers.get('content-security-policy')).toBe(
      "default-src 'none'",
    );
    const redirect = kit.secureResponse(req, Response.redirect('https://app.example/x', 302));
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('https://app.example/x');
    expect(redirect.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
