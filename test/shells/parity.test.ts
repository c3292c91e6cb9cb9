/**
 * Shell parity (issue 31 item 6): ONE table of cases, each sent to the Express
 * app (`kit.middleware()`, routes behind `kit.authenticated()`) and to the Fetch
 * app (Hono on @hono/node-server: `kit.fetch`, `kit.authenticate`,
 * `kit.secureResponse`), each with a kit of its own on a Postgres database of its
 * own, over real sockets against the local platform (test/helpers/shell-parity.ts).
 *
 * Every case asserts, on each shell, the "one kit" answer of DECISIONS.md
 * ("Request path"): status, error code, the named headers (challenge, Allow,
 * Retry-After, the kit's header set, Cache-Control, cookie attributes) and the
 * side effects (rows written, purges done, spans emitted). A third test per
 * case compares what the two shells did, header by header, so a difference
 * nobody wrote an expectation for still fails.
 *
 * To add a case: one entry in CASES. Nothing else.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CALLBACK_OUTCOMES,
  type CallbackOutcomeKind,
} from '../../src/install/callback-outcomes.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { SPAN } from '../../src/telemetry/index.js';
import {
  type Answer,
  BINDING_COOKIE,
  CALLBACKS_PER_SOURCE,
  FRAMED,
  freshSource,
  HEALTH_TOKEN,
  type Jar,
  type Parity,
  type Rows,
  SESSION_COOKIE,
  SHELLS,
  type ShellApp,
  type ShellName,
  startParity,
  TABLES,
  type Table,
  TOP_LEVEL,
  WEBHOOK_LIMITS,
  XHR,
} from '../helpers/shell-parity.js';
import { type Otel, registerOtel } from '../telemetry/otel.js';

// --- what a case expects ------------------------------------------------------

/** A header's expected value: exact, a pattern, absent (null), or a named check. */
type HeaderExpect = string | RegExp | null | Check;
interface Check {
  describe: string;
  test(value: string | undefined, app: ShellApp): boolean;
}
/** A cookie the answer sets (`set`, with these attributes) or clears; null: not touched. */
type CookieExpect = null | { state: 'set' | 'cleared'; attrs?: string[] };
interface SpanExpect {
  name: string;
  status?: number;
  /** The stable code on the span (`error.type`); null: none. */
  errorType?: string | null;
}

interface Expected {
  status: number;
  /** The error code (JSON `code`, else `X-Store-App-Error`); null: none. */
  code?: string | null;
  headers?: Record<string, HeaderExpect>;
  cookies?: Record<string, CookieExpect>;
  /** Rows each table gained (negative: lost) during the request(s) under test. */
  rows?: Partial<Record<Table, number>>;
  /** The kit's handler spans emitted, in any order (exactly these). */
  spans?: SpanExpect[];
  /** Anything else the case promises (body, stored state, handlers run). */
  check?(app: ShellApp, answer: Answer, state: never): Promise<void> | void;
}

interface ParityCase<S = unknown> {
  name: string;
  /** Prepares what the case needs (not measured: rows and spans count from `run`). */
  setup?(app: ShellApp): Promise<S>;
  /** The request(s) under test; the answer the expectations read. */
  run(app: ShellApp, state: S): Promise<Answer>;
  expect: Expected;
  /** The callback outcome this case reaches (every row of CALLBACK_OUTCOMES has one). */
  outcome?: CallbackOutcomeKind;
}

/** Keeps each case's state type with its own setup and run. */
function c<S>(x: ParityCase<S>): ParityCase {
  return x as ParityCase;
}

// --- header sets (DECISIONS.md: the kit's set, decided in the core) -------------

const methods = (...m: string[]): Check => ({
  describe: `the methods ${m.join(', ')}`,
  test: (v) =>
    v !== undefined &&
    v
      .split(',')
      .map((x) => x.trim().toUpperCase())
      .sort()
      .join() === [...m].sort().join(),
});
const hasToken = (token: string): Check => ({
  describe: `a list naming ${token}`,
  test: (v) =>
    (v ?? '')
      .toLowerCase()
      .split(',')
      .map((x) => x.trim())
      .includes(token.toLowerCase()),
});
const seconds: Check = {
  describe: 'a number of seconds',
  test: (v) => v !== undefined && /^\d+$/.test(v) && Number(v) > 0,
};
/** The CSP names the store admin, and only it, as the frame ancestor. */
const framedByAdmin: Check = {
  describe: 'a CSP with frame-ancestors <the admin origin>',
  test: (v, app) =>
    (v ?? '')
      .split(';')
      .map((d) => d.trim())
      .includes(`frame-ancestors ${new URL(app.platform.authUrl).origin}`),
};
const appUrl = (path: string): Check => ({
  describe: `{app}${path}`,
  test: (v, app) => v === `${app.url}${path}`,
});

/** Every answer of the kit, and every app route behind it: never sniffed into another type. */
const NOSNIFF = { 'x-content-type-options': 'nosniff' } as const;
/** The document set (browser requests): what helmet sets on Express today. */
const BROWSER_SET: Record<string, HeaderExpect> = {
  ...NOSNIFF,
  'strict-transport-security': /^max-age=\d+/,
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'content-security-policy': framedByAdmin,
  // Embedded: framing is said by frame-ancestors, X-Frame-Options cannot name one origin.
  'x-frame-options': null,
};
/** A bearer request (read by script): nosniff, HSTS, Vary: Authorization, no document headers. */
const BEARER_SET: Record<string, HeaderExpect> = {
  ...NOSNIFF,
  'strict-transport-security': /^max-age=\d+/,
  vary: hasToken('authorization'),
  'referrer-policy': null,
  'cross-origin-opener-policy': null,
  'content-security-policy': null,
};
const NO_STORE = { 'cache-control': 'no-store' } as const;
/** The challenge of a request that presented no credentials (RFC 6750 §3). */
const CHALLENGE_NONE = { 'www-authenticate': 'Bearer' } as const;
/** The challenge of a refused token or session. */
const CHALLENGE_INVALID = { 'www-authenticate': 'Bearer error="invalid_token"' } as const;

const span = (name: string, status: number, errorType: string | null = null): SpanExpect => ({
  name,
  status,
  errorType,
});
const beginSpan = (status: number, errorType: string | null = null) =>
  span(SPAN.installBegin, status, errorType);
const callbackSpan = (status: number, errorType: string | null = null) =>
  span(SPAN.installCallback, status, errorType);
const webhookSpan = (status: number, errorType: string | null = null) =>
  span(SPAN.webhook, status, errorType);

/** The pending-install cookie, as the callback outcome's row says it is treated. */
function bindingAfter(kind: CallbackOutcomeKind): CookieExpect {
  const row = CALLBACK_OUTCOMES[kind];
  if (row.binding === 'keep') return null;
  // `update` drops this install from the cookie: with no other tab's install left, it is cleared.
  return { state: row.binding === 'restart' ? 'set' : 'cleared' };
}
const BINDING_ATTRS = ['httponly', 'samesite=lax', 'path=/auth'];

/** A callback outcome's expected answer, read from CALLBACK_OUTCOMES (the single source). */
function outcome(
  kind: CallbackOutcomeKind,
  more: Partial<Expected> = {},
  code: string | null = CALLBACK_OUTCOMES[kind].code,
): Expected {
  const status = more.status ?? CALLBACK_OUTCOMES[kind].status;
  return {
    status,
    code,
    ...more,
    headers: { ...BROWSER_SET, ...NO_STORE, ...more.headers },
    cookies: { [BINDING_COOKIE]: bindingAfter(kind), ...more.cookies },
    spans: more.spans ?? [callbackSpan(status, status >= 400 ? code : null)],
  };
}

// --- requests the cases share ---------------------------------------------------

const ORDER = (storeId: string) => ({
  type: 'orders.create',
  timestamp: new Date().toISOString(),
  data: { store_id: storeId, order: { id: `ord_${randomUUID()}`, total: '12.00' } },
});
/** A valid delivery padded to about `bytes`. */
const padded = (storeId: string, bytes: number) => ({
  ...ORDER(storeId),
  pad: 'x'.repeat(bytes),
});
const SOME_STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
const OTHER_STORE = '0b6f7a11-2c3d-4e5f-8a9b-1c2d3e4f5a6b';

function post(app: ShellApp, path: string, d: { body: string; headers: Record<string, string> }) {
  return app.send(path, { method: 'POST', headers: d.headers, body: d.body });
}

/** Begins an install in `jar` and returns the platform's authorize URL. */
async function begin(jar: Jar, storeId: string): Promise<string> {
  const r = await jar.get(`/auth?store_id=${storeId}`, TOP_LEVEL);
  if (r.status !== 302) throw new Error(`begin answered ${r.status}`);
  return String(r.headers.location);
}

/** A store with a pending install in a fresh browser, approved: the callback URL. */
async function approved(app: ShellApp, grantScopes?: string[]) {
  const { storeId } = app.platform.createStore({ name: 'Parity store' });
  const jar = app.browser();
  const authorizeUrl = await begin(jar, storeId);
  const callbackUrl = app.platform.approveInstall({
    authorizeUrl,
    storeId,
    ...(grantScopes ? { grantScopes } : {}),
  });
  return { storeId, jar, authorizeUrl, callbackUrl };
}

/** A genuine pending install answered with a code the platform never issued. */
async function junkCallback(jar: Jar, authorizeUrl: string, storeId: string) {
  const state = new URL(authorizeUrl).searchParams.get('state')!;
  return jar.get(
    `/auth/callback?code=junk-${randomUUID()}&state=${state}&store_id=${storeId}`,
    TOP_LEVEL,
  );
}

/** The store each shell installed once, for the cases that only need one. */
const installed = new Map<ShellName, Promise<{ storeId: string; jar: Jar }>>();
function store(app: ShellApp) {
  let s = installed.get(app.shell);
  if (!s) {
    s = app.install();
    installed.set(app.shell, s);
  }
  return s;
}
async function bearer(app: ShellApp): Promise<{ storeId: string; token: string }> {
  const { storeId } = await store(app);
  return { storeId, token: (await app.kit.sessionToken(storeId)).token };
}

// --- the table ------------------------------------------------------------------

const CASES: ParityCase[] = [
  // Webhooks ---------------------------------------------------------------------
  c({
    name: 'webhook: a valid delivery is processed once',
    run: (app) => post(app, '/webhooks', app.delivery(ORDER(SOME_STORE))),
    expect: {
      status: 200,
      code: null,
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 1 },
      spans: [webhookSpan(200)],
      check: (app, a) => {
        expect(a.json).toEqual({ status: 'processed' });
        expect(app.handled).toHaveLength(1);
      },
    },
  }),
  c({
    name: 'webhook: the same delivery twice runs its handler once',
    setup: async (app) => {
      const d = app.delivery(ORDER(SOME_STORE));
      const first = await post(app, '/webhooks', d);
      expect(first.status).toBe(200);
      return d;
    },
    run: (app, d) => post(app, '/webhooks', d),
    expect: {
      status: 200,
      code: null,
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(200)],
      check: (app, a) => {
        expect(a.json).toEqual({ status: 'duplicate' });
        expect(app.handled).toHaveLength(0);
      },
    },
  }),
  c({
    name: 'webhook: an unsigned delivery is refused before its body',
    run: (app) =>
      app.send('/webhooks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(ORDER(SOME_STORE)),
      }),
    expect: {
      status: 400,
      code: 'MISSING_HEADERS',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(400, 'MISSING_HEADERS')],
    },
  }),
  c({
    name: 'webhook: a signature by another secret is refused',
    run: (app) =>
      post(
        app,
        '/webhooks',
        app.delivery(ORDER(SOME_STORE), {
          secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
        }),
      ),
    expect: {
      status: 401,
      code: 'SIGNATURE_MISMATCH',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(401, 'SIGNATURE_MISMATCH')],
    },
  }),
  c({
    name: 'webhook: a body that is not JSON by its type is refused',
    run: (app) => {
      const d = app.delivery(ORDER(SOME_STORE));
      return post(app, '/webhooks', {
        body: d.body,
        headers: { ...d.headers, 'content-type': 'text/plain' },
      });
    },
    expect: {
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
    },
  }),
  c({
    name: 'webhook: a signed delivery declaring more than maxBodyBytes is refused unread',
    run: (app) => {
      const d = app.delivery(ORDER(SOME_STORE));
      return app.send('/webhooks', {
        method: 'POST',
        headers: d.headers,
        declaredLength: 100 * 1024 * 1024,
      });
    },
    expect: {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(413, 'PAYLOAD_TOO_LARGE')],
    },
  }),
  c({
    name: 'webhook: a signed chunked body over maxBodyBytes is cut off',
    run: (app) => {
      const d = app.delivery(padded(SOME_STORE, WEBHOOK_LIMITS.maxBodyBytes + 1024));
      return app.send('/webhooks', {
        method: 'POST',
        headers: d.headers,
        body: d.body,
        chunked: true,
      });
    },
    expect: {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(413, 'PAYLOAD_TOO_LARGE')],
    },
  }),
  c({
    // One order for every shell: the signature headers are checked first (an unsigned
    // delivery is refused the same whatever it declares), then the size
    // (src/core/webhook-receiver.ts: method, content type, headers, size).
    name: 'webhook: an unsigned delivery declaring 100 MiB is refused for its missing signature',
    run: (app) =>
      app.send('/webhooks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        declaredLength: 100 * 1024 * 1024,
      }),
    expect: {
      status: 400,
      code: 'MISSING_HEADERS',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(400, 'MISSING_HEADERS')],
    },
  }),
  c({
    name: 'webhook: a sender gone mid-body leaves nothing held (the next delivery is received)',
    setup: async (app) => {
      const d = app.delivery(padded(SOME_STORE, WEBHOOK_LIMITS.maxBodyBytes - 1024));
      await app.sendAndAbort('/webhooks', {
        method: 'POST',
        headers: d.headers,
        body: d.body,
        abortAfterBytes: 1024,
      });
      // The kit notices the reset and ends that request (its span) before the next one.
      await spansSettle(1);
    },
    // 31 KiB reserved and leaked + 16 KiB would pass maxUnverifiedBytes (40 KiB): 503.
    run: (app) => post(app, '/webhooks', app.delivery(padded(SOME_STORE, 16 * 1024))),
    expect: {
      status: 200,
      code: null,
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 1 },
      spans: [webhookSpan(200)],
      check: (app) => expect(app.handled).toHaveLength(1),
    },
  }),
  c({
    name: 'webhook: a body slower than bodyTimeoutMs is abandoned (408)',
    run: (app) => {
      const d = app.delivery(ORDER(SOME_STORE));
      return app.send('/webhooks', {
        method: 'POST',
        headers: d.headers,
        body: d.body,
        stallAfterBytes: 10,
      });
    },
    expect: {
      status: 408,
      code: 'WEBHOOK_BODY_TIMEOUT',
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 0 },
      spans: [webhookSpan(408, 'WEBHOOK_BODY_TIMEOUT')],
      check: (app) => expect(app.handled).toHaveLength(0),
    },
  }),
  c({
    name: 'webhook: GET on the receiver is 405 naming POST',
    run: (app) => app.send('/webhooks'),
    expect: {
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: { ...NOSNIFF, allow: methods('POST') },
      rows: { store_app_webhook_deliveries: 0 },
    },
  }),
  c({
    name: 'webhook: app.uninstalled purges the store (once, with its span)',
    setup: (app) => app.install(),
    run: (app, s) =>
      post(
        app,
        '/webhooks',
        app.delivery({
          type: 'app.uninstalled',
          timestamp: new Date().toISOString(),
          data: { store_id: s.storeId, client_id: app.clientId },
        }),
      ),
    expect: {
      status: 200,
      code: null,
      headers: NOSNIFF,
      // The store's installation and sessions go, audited once; nothing stays pending.
      rows: {
        store_app_webhook_deliveries: 1,
        store_app_installations: -1,
        store_app_sessions: -1,
        store_app_purge_audit: 1,
        store_app_pending_purges: 0,
      },
      spans: [webhookSpan(200), { name: SPAN.purge }],
      check: async (app, _a, s: { storeId: string }) => {
        expect(await app.kit.installations.get(s.storeId)).toBeNull();
        expect(await app.kit.pendingPurges()).toEqual([]);
      },
    },
  }),

  // Install begin ------------------------------------------------------------------
  c({
    name: 'install begin: redirects to the platform with a pending-install cookie',
    run: (app) => app.browser().get(`/auth?store_id=${SOME_STORE}`, TOP_LEVEL),
    expect: {
      status: 302,
      code: null,
      headers: {
        ...BROWSER_SET,
        ...NO_STORE,
        location: {
          describe: "the platform's authorize page",
          test: (v, app) => v?.startsWith(`${app.platform.authUrl}/oauth/authorize?`) === true,
        },
      },
      cookies: { [BINDING_COOKIE]: { state: 'set', attrs: BINDING_ATTRS } },
      rows: { install_claims: 0, store_app_sessions: 0 },
      spans: [beginSpan(302)],
    },
  }),
  c({
    name: 'install begin inside the admin frame: the page that leaves the frame, no cookie',
    run: (app) => app.browser().get(`/auth?store_id=${SOME_STORE}`, FRAMED),
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET, ...NO_STORE, 'content-type': /^text\/html/ },
      cookies: { [BINDING_COOKIE]: null },
      spans: [beginSpan(200)],
      check: (_app, a) => expect(a.text).toContain('window.top.location'),
    },
  }),
  c({
    name: 'install begin with a store id that is not one: 400',
    run: (app) => app.browser().get('/auth?store_id=not%20a%20store%3F', TOP_LEVEL),
    expect: {
      status: 400,
      code: E.STORE_ID_INVALID,
      headers: { ...BROWSER_SET, ...NO_STORE },
      cookies: { [BINDING_COOKIE]: null },
      rows: { install_claims: 0 },
      spans: [beginSpan(400, E.STORE_ID_INVALID)],
    },
  }),

  // Install callback: every row of CALLBACK_OUTCOMES ---------------------------------
  c({
    name: 'callback: a repeated parameter is malformed',
    outcome: 'malformed',
    run: (app) => app.browser().get('/auth/callback?code=a&code=b&state=s', TOP_LEVEL),
    expect: outcome('malformed', { rows: { install_claims: 0 } }),
  }),
  c({
    name: 'callback: the platform reports an error',
    outcome: 'platform_error',
    run: (app) => app.browser().get('/auth/callback?error=server_error&state=whatever', TOP_LEVEL),
    expect: outcome('platform_error', { rows: { install_claims: 0 } }),
  }),
  c({
    name: 'callback: the merchant declined (access_denied)',
    outcome: 'platform_error',
    setup: async (app) => {
      const { storeId } = app.platform.createStore({ name: 'Declined' });
      const jar = app.browser();
      const authorizeUrl = await begin(jar, storeId);
      return { jar, denied: app.platform.denyInstall({ authorizeUrl, storeId }) };
    },
    run: (_app, s) => s.jar.get(s.denied, TOP_LEVEL),
    expect: outcome(
      'platform_error',
      { status: 403, rows: { install_claims: 0 } },
      E.ACCESS_DENIED,
    ),
  }),
  c({
    name: 'callback: no code',
    outcome: 'missing_params',
    run: (app) => app.browser().get(`/auth/callback?state=abc&store_id=${SOME_STORE}`, TOP_LEVEL),
    expect: outcome('missing_params', { rows: { install_claims: 0 } }),
  }),
  c({
    name: 'callback: a store id that is not one',
    outcome: 'store_id_invalid',
    run: (app) => app.browser().get('/auth/callback?code=a&state=b&store_id=no%2Fpe', TOP_LEVEL),
    expect: outcome('store_id_invalid', { rows: { install_claims: 0 } }),
  }),
  c({
    name: 'callback: begun in another browser (no pending-install cookie)',
    outcome: 'binding_missing',
    setup: (app) => approved(app),
    run: (app, s) => app.browser().get(s.callbackUrl, TOP_LEVEL),
    expect: outcome('binding_missing', {
      rows: { install_claims: 0, store_app_installations: 0 },
    }),
  }),
  c({
    name: 'callback: a state this browser never began',
    outcome: 'state_invalid',
    setup: async (app) => {
      const jar = app.browser();
      await begin(jar, SOME_STORE);
      return jar;
    },
    run: (_app, jar) =>
      jar.get(`/auth/callback?code=abc&state=${'A'.repeat(43)}&store_id=${SOME_STORE}`, TOP_LEVEL),
    // `update`: this install leaves the cookie; the one this browser did begin stays in it.
    expect: outcome('state_invalid', {
      rows: { install_claims: 0 },
      cookies: { [BINDING_COOKIE]: { state: 'set', attrs: BINDING_ATTRS } },
    }),
  }),
  c({
    name: `callback: past ${CALLBACKS_PER_SOURCE} callbacks a minute from one address, 429`,
    outcome: 'rate_limited',
    setup: async (app) => {
      for (let i = 0; i < CALLBACKS_PER_SOURCE; i++) {
        const jar = app.browser();
        const authorizeUrl = await begin(jar, SOME_STORE);
        const r = await junkCallback(jar, authorizeUrl, SOME_STORE);
        expect(r.status).toBe(302); // invalid_grant: one fresh attempt
      }
      const jar = app.browser();
      return { jar, authorizeUrl: await begin(jar, SOME_STORE) };
    },
    run: (_app, s) => junkCallback(s.jar, s.authorizeUrl, SOME_STORE),
    expect: outcome('rate_limited', {
      headers: { 'retry-after': seconds },
      rows: { install_claims: 0 },
    }),
  }),
  c({
    name: 'callback: the database does not answer',
    outcome: 'storage_down',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.database.hang();
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        await app.database.resume();
      }
    },
    expect: outcome('storage_down', {
      headers: { 'retry-after': seconds },
      check: async (app, _a, s: { storeId: string }) => {
        expect(await app.kit.installations.get(s.storeId)).toBeNull();
      },
    }),
  }),
  c({
    name: 'callback: for another store than the install began for',
    outcome: 'store_mismatch',
    setup: async (app) => {
      const s = await approved(app);
      const swapped = new URL(s.callbackUrl);
      swapped.searchParams.set('store_id', app.platform.createStore({ name: 'Other' }).storeId);
      return { ...s, swapped: swapped.toString() };
    },
    run: (_app, s) => s.jar.get(s.swapped, TOP_LEVEL),
    expect: outcome('store_mismatch', {
      rows: { store_app_installations: 0, install_claims: 1 },
    }),
  }),
  c({
    name: 'callback: a code already exchanged, pasted into a new install',
    outcome: 'code_replayed',
    setup: async (app) => {
      const first = await app.install();
      const jar = app.browser();
      const authorizeUrl = await begin(jar, first.storeId);
      const fresh = new URL(app.platform.approveInstall({ authorizeUrl, storeId: first.storeId }));
      fresh.searchParams.set('code', new URL(first.callbackUrl).searchParams.get('code')!);
      return { jar, replay: fresh.toString(), storeId: first.storeId };
    },
    run: (_app, s) => s.jar.get(s.replay, TOP_LEVEL),
    expect: outcome('code_replayed', {
      rows: { store_app_installations: 0, install_claims: 1 },
    }),
  }),
  c({
    name: 'callback: a code the platform refuses starts one fresh attempt',
    outcome: 'restart',
    setup: async (app) => {
      const jar = app.browser();
      return { jar, authorizeUrl: await begin(jar, SOME_STORE) };
    },
    run: (_app, s) => junkCallback(s.jar, s.authorizeUrl, SOME_STORE),
    expect: outcome('restart', {
      headers: {
        location: {
          describe: "the platform's authorize page with a new state",
          test: (v, app) => v?.startsWith(`${app.platform.authUrl}/oauth/authorize?`) === true,
        },
      },
      cookies: { [BINDING_COOKIE]: { state: 'set', attrs: BINDING_ATTRS } },
      rows: { store_app_installations: 0 },
    }),
  }),
  c({
    name: 'callback: refused again after the fresh attempt',
    outcome: 'code_rejected',
    setup: async (app) => {
      const jar = app.browser();
      const restarted = await junkCallback(jar, await begin(jar, SOME_STORE), SOME_STORE);
      expect(restarted.status).toBe(302);
      return { jar, authorizeUrl: String(restarted.headers.location) };
    },
    run: (_app, s) => junkCallback(s.jar, s.authorizeUrl, SOME_STORE),
    expect: outcome('code_rejected', { rows: { store_app_installations: 0 } }),
  }),
  c({
    name: "callback: the platform refuses the app's client credentials",
    outcome: 'client_rejected',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.exchange.mode = 'invalid_client';
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        app.exchange.mode = 'pass';
      }
    },
    expect: outcome('client_rejected', { rows: { store_app_installations: 0 } }),
  }),
  c({
    name: 'callback: the token endpoint fails',
    outcome: 'exchange_failed',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.platform.setFaults({ token: { errorRate: 1, errorStatus: 500 } });
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        app.platform.setFaults(undefined);
      }
    },
    expect: outcome('exchange_failed', { rows: { store_app_installations: 0 } }),
  }),
  c({
    name: 'callback: the tokens name another store',
    outcome: 'inconsistent_store',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.exchange.mode = 'other_store';
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        app.exchange.mode = 'pass';
      }
    },
    expect: outcome('inconsistent_store', { rows: { store_app_installations: 0 } }),
  }),
  c({
    name: 'callback: the merchant granted fewer scopes',
    outcome: 'scopes_refused',
    setup: (app) => approved(app, ['read_products']),
    run: (_app, s) => s.jar.get(s.callbackUrl, TOP_LEVEL),
    expect: outcome('scopes_refused', { rows: { store_app_installations: 0 } }),
  }),
  c({
    name: 'callback: beforeInstall throws, nothing is stored',
    outcome: 'before_hook_failed',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.hooks.failBefore = true;
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        app.hooks.failBefore = false;
      }
    },
    expect: outcome('before_hook_failed', {
      rows: { store_app_installations: 0, store_app_sessions: 0 },
    }),
  }),
  c({
    name: 'callback: afterInstall throws, the installation is kept',
    outcome: 'after_hook_failed',
    setup: (app) => approved(app),
    run: async (app, s) => {
      app.hooks.failAfter = true;
      try {
        return await s.jar.get(s.callbackUrl, TOP_LEVEL);
      } finally {
        app.hooks.failAfter = false;
      }
    },
    expect: outcome('after_hook_failed', {
      rows: { store_app_installations: 1, store_app_sessions: 1 },
    }),
  }),
  c({
    name: 'callback: installed, the session starts, back to the admin',
    outcome: 'installed',
    setup: (app) => approved(app),
    run: (_app, s) => s.jar.get(s.callbackUrl, TOP_LEVEL),
    expect: outcome('installed', {
      headers: {
        location: {
          describe: "the app's page in the store admin",
          test: (v, app) =>
            v?.startsWith(`${app.platform.authUrl}/admin/stores/`) === true &&
            v.endsWith(`/apps/${app.clientId}`),
        },
      },
      cookies: {
        [BINDING_COOKIE]: { state: 'cleared' },
        [SESSION_COOKIE]: { state: 'set', attrs: ['httponly', 'path=/'] },
      },
      rows: { store_app_installations: 1, store_app_sessions: 1, install_claims: 2 },
    }),
  }),

  // authenticate -------------------------------------------------------------------
  c({
    name: 'authenticate: a bearer app session token',
    setup: bearer,
    run: (app, s) =>
      app.send('/api/notes', { headers: { ...XHR, authorization: `Bearer ${s.token}` } }),
    expect: {
      status: 200,
      code: null,
      headers: { ...BEARER_SET },
      check: (_app, a, s: { storeId: string }) =>
        expect(a.json).toMatchObject({ storeId: s.storeId }),
    },
  }),
  c({
    name: 'authenticate: an expired bearer token is 401 invalid_token',
    setup: bearer,
    run: async (app, s) => {
      // Only this process's Date moves: the token's five minutes (and the tolerance) are past.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 10 * 60_000 });
      try {
        return await app.send('/api/notes', {
          headers: { ...XHR, authorization: `Bearer ${s.token}` },
        });
      } finally {
        vi.useRealTimers();
      }
    },
    expect: {
      status: 401,
      code: 'SESSION_TOKEN_EXPIRED',
      headers: { ...BEARER_SET, ...CHALLENGE_INVALID, ...NO_STORE },
    },
  }),
  c({
    name: 'authenticate: a malformed bearer token is 401 invalid_token',
    run: (app) =>
      app.send('/api/notes', { headers: { ...XHR, authorization: 'Bearer not.a.token' } }),
    expect: {
      status: 401,
      code: 'SESSION_TOKEN_INVALID',
      headers: { ...BEARER_SET, ...CHALLENGE_INVALID, ...NO_STORE },
    },
  }),
  c({
    name: 'authenticate: no credentials is 401 with a bare Bearer challenge',
    run: (app) => app.send('/api/notes', { headers: XHR }),
    expect: {
      status: 401,
      code: 'SESSION_REQUIRED',
      headers: {
        ...BROWSER_SET,
        ...CHALLENGE_NONE,
        ...NO_STORE,
        'x-store-app-reauthorize': appUrl('/auth'),
      },
    },
  }),
  c({
    name: "authenticate: the admin's launch ends on the page with a session",
    setup: async (app) => app.launchUrl((await store(app)).storeId),
    run: async (app, launchUrl) => {
      const jar = app.browser();
      const first = await jar.get(launchUrl, FRAMED);
      // The Fetch shell answers the launch with a redirect carrying the cookie (docs/runtimes.md).
      const location = first.headers.location;
      if (first.status !== 302 || !location) return first;
      const page = await jar.get(String(location), FRAMED);
      return { ...page, setCookies: [...first.setCookies, ...page.setCookies] };
    },
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET, ...NO_STORE, 'content-type': /^text\/html/ },
      cookies: { [SESSION_COOKIE]: { state: 'set', attrs: ['httponly', 'path=/'] } },
      rows: { store_app_sessions: 1 },
      check: (_app, a) => expect(a.text).toContain('<p id="store">'),
    },
  }),
  c({
    name: 'authenticate: the session cookie (the app calling its API)',
    setup: store,
    run: (_app, s) => s.jar.get('/api/notes', XHR),
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET },
      check: (_app, a, s: { storeId: string }) =>
        expect(a.json).toMatchObject({ storeId: s.storeId }),
    },
  }),
  c({
    name: 'authenticate: a write another site sent with the session cookie is 403',
    setup: store,
    run: (_app, s) =>
      s.jar.send('/api/notes', {
        method: 'POST',
        headers: { ...XHR, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' },
        body: '{}',
      }),
    expect: {
      status: 403,
      code: 'CROSS_SITE_REQUEST',
      headers: { ...BROWSER_SET, ...NO_STORE, 'www-authenticate': null },
    },
  }),
  c({
    name: "authenticate: a page for another store than the session's re-authorises there",
    setup: store,
    run: (_app, s) => s.jar.get(`/?store_id=${OTHER_STORE}`, TOP_LEVEL),
    expect: {
      status: 302,
      code: null,
      headers: { ...BROWSER_SET, location: appUrl(`/auth?store_id=${OTHER_STORE}`) },
    },
  }),
  c({
    name: 'session token route: the cookie session gets a bearer token',
    setup: store,
    run: (_app, s) => s.jar.get('/auth/session-token', XHR),
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET, ...NO_STORE },
      check: (_app, a) => expect(a.json).toMatchObject({ token: expect.any(String) }),
    },
  }),
  c({
    name: 'session token route: no credentials is 401 with a bare Bearer challenge',
    run: (app) => app.send('/auth/session-token', { headers: XHR }),
    expect: {
      status: 401,
      code: 'SESSION_REQUIRED',
      headers: { ...BROWSER_SET, ...CHALLENGE_NONE, ...NO_STORE },
    },
  }),

  // Health ---------------------------------------------------------------------------
  c({
    name: 'health: liveness only without its token',
    run: (app) => app.send('/healthz'),
    expect: {
      status: 200,
      code: null,
      headers: { ...NOSNIFF, ...NO_STORE },
      check: (_app, a) => expect(a.json).toEqual({ status: 'ok' }),
    },
  }),
  c({
    name: 'health: the detail with its token',
    run: (app) => app.send('/healthz', { headers: { authorization: `Bearer ${HEALTH_TOKEN}` } }),
    expect: {
      status: 200,
      code: null,
      headers: { ...NOSNIFF, ...NO_STORE },
      check: (_app, a) =>
        expect(a.json).toMatchObject({ status: 'ok', database: { status: 'up' } }),
    },
  }),

  // Path variants (one matching rule: case, one trailing slash, HEAD, 405 + Allow) -----
  c({
    name: 'path: POST /Webhooks reaches the receiver',
    run: (app) => post(app, '/Webhooks', app.delivery(ORDER(SOME_STORE))),
    expect: {
      status: 200,
      code: null,
      headers: NOSNIFF,
      rows: { store_app_webhook_deliveries: 1 },
      spans: [webhookSpan(200)],
    },
  }),
  c({
    name: 'path: POST /webhooks/ reaches the receiver',
    run: (app) =>
      app.send('/webhooks/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
    expect: {
      status: 400,
      code: 'MISSING_HEADERS',
      headers: NOSNIFF,
      spans: [webhookSpan(400, 'MISSING_HEADERS')],
    },
  }),
  c({
    name: 'path: GET /HEALTHZ is the health route',
    run: (app) => app.send('/HEALTHZ'),
    expect: {
      status: 200,
      code: null,
      headers: { ...NOSNIFF, ...NO_STORE },
      check: (_app, a) => expect(a.json).toEqual({ status: 'ok' }),
    },
  }),
  c({
    name: 'path: GET /auth/ is install begin',
    run: (app) => app.browser().get(`/auth/?store_id=${SOME_STORE}`, TOP_LEVEL),
    expect: {
      status: 302,
      code: null,
      headers: { ...BROWSER_SET, ...NO_STORE },
      cookies: { [BINDING_COOKIE]: { state: 'set', attrs: BINDING_ATTRS } },
      spans: [beginSpan(302)],
    },
  }),
  c({
    name: 'path: HEAD /healthz is served by the GET route, without a body',
    run: (app) => app.send('/healthz', { method: 'HEAD' }),
    expect: {
      status: 200,
      code: null,
      headers: { ...NOSNIFF, ...NO_STORE },
      check: (_app, a) => expect(a.text).toBe(''),
    },
  }),
  c({
    name: 'path: HEAD /auth/session-token is served by the GET route',
    setup: store,
    run: (_app, s) => s.jar.send('/auth/session-token', { method: 'HEAD', headers: XHR }),
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET, ...NO_STORE },
      check: (_app, a) => expect(a.text).toBe(''),
    },
  }),
  c({
    name: 'path: POST /auth is 405 naming GET and HEAD',
    run: (app) => app.send('/auth', { method: 'POST', body: '' }),
    expect: {
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: { ...NOSNIFF, allow: methods('GET', 'HEAD') },
      cookies: { [BINDING_COOKIE]: null },
    },
  }),
  c({
    name: 'path: PUT /auth/callback is 405 naming GET and HEAD',
    run: (app) => app.send('/auth/callback?code=a&state=b', { method: 'PUT', body: '' }),
    expect: {
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: { ...NOSNIFF, allow: methods('GET', 'HEAD') },
      rows: { install_claims: 0 },
    },
  }),
  c({
    name: 'path: DELETE /healthz is 405 naming GET and HEAD',
    run: (app) => app.send('/healthz', { method: 'DELETE' }),
    expect: {
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: { ...NOSNIFF, allow: methods('GET', 'HEAD') },
    },
  }),
  c({
    name: 'path: POST /auth/session-token is 405 naming GET and HEAD',
    run: (app) => app.send('/auth/session-token', { method: 'POST', body: '' }),
    expect: {
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: { ...NOSNIFF, allow: methods('GET', 'HEAD') },
    },
  }),

  // The app's own routes behind the kit: the kit's header set ----------------------------
  c({
    name: "app route: the page carries the document set and keeps the app's own CSP",
    setup: store,
    run: (_app, s) => s.jar.get('/', TOP_LEVEL),
    expect: {
      status: 200,
      code: null,
      headers: {
        ...BROWSER_SET,
        ...NO_STORE,
        'content-type': /^text\/html/,
        'content-security-policy': {
          describe: "the app's own CSP (default-src 'self') with frame-ancestors the admin",
          test: (v, app) =>
            v?.startsWith("default-src 'self'") === true && framedByAdmin.test(v, app),
        },
      },
    },
  }),
  c({
    name: 'app route: JSON the merchant wrote, read with a bearer token, is not sniffed and varies by Authorization',
    setup: bearer,
    run: (app, s) =>
      app.send('/api/notes', { headers: { ...XHR, authorization: `Bearer ${s.token}` } }),
    expect: {
      status: 200,
      code: null,
      headers: { ...BEARER_SET, 'content-type': /^application\/json/ },
    },
  }),
  c({
    name: 'app route: a cookie write from the app itself is served with the document set',
    setup: store,
    run: (_app, s) =>
      s.jar.send('/api/notes', {
        method: 'POST',
        headers: { ...XHR, 'content-type': 'application/json' },
        body: '{}',
      }),
    expect: {
      status: 200,
      code: null,
      headers: { ...BROWSER_SET },
      check: (_app, a, s: { storeId: string }) => expect(a.json).toEqual({ saved: s.storeId }),
    },
  }),
];

// --- the runner -------------------------------------------------------------------

/** The kit's spans of a request (not the client's, not background work's). */
const REQUEST_SPANS: ReadonlySet<string> = new Set([
  SPAN.installBegin,
  SPAN.installCallback,
  SPAN.webhook,
]);
/** Spans a request's work starts under it (a purge the uninstall delivery runs). */
const NESTED_SPANS: ReadonlySet<string> = new Set([SPAN.purge]);
/** Headers compared between the shells (normalised: values that differ by app are named). */
const COMPARED = [
  'www-authenticate',
  'allow',
  'retry-after',
  'x-content-type-options',
  'vary',
  'strict-transport-security',
  'referrer-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'content-security-policy',
  'x-frame-options',
  'cache-control',
  'content-type',
  'location',
  'x-store-app-reauthorize',
] as const;

let parity: Parity;
let otel: Otel;

/** Waits (bounded) until `count` handler spans ended, or a short quiet period when unknown. */
async function spansSettle(count?: number) {
  // A purge counts when a request of the case started it (same trace), not the outbox's.
  const handlerSpans = () => {
    const all = otel.spans();
    const traces = new Set(
      all.filter((s) => REQUEST_SPANS.has(s.name)).map((s) => s.spanContext().traceId),
    );
    return all.filter(
      (s) =>
        REQUEST_SPANS.has(s.name) ||
        (NESTED_SPANS.has(s.name) && traces.has(s.spanContext().traceId)),
    );
  };
  const end = Date.now() + 3000;
  while (count !== undefined && handlerSpans().length < count && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 50));
  return handlerSpans();
}

function normaliseUrl(value: string, app: ShellApp): string {
  const u = new URL(value, app.url);
  const origin =
    u.origin === app.url ? '{app}' : u.origin === app.platform.url ? '{platform}' : u.origin;
  const path = u.pathname
    .replaceAll(app.clientId, '{client}')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '{uuid}');
  return `${origin}${path}?${[...new Set(u.searchParams.keys())].sort().join('&')}`;
}

function normaliseHeader(name: (typeof COMPARED)[number], value: string, app: ShellApp): string {
  switch (name) {
    case 'allow':
    case 'vary':
      return value
        .split(',')
        .map((x) => x.trim().toLowerCase())
        .sort()
        .join(', ');
    case 'retry-after':
      return 'seconds';
    case 'content-security-policy':
      return (
        value
          .split(';')
          .map((d) => d.trim())
          .find((d) => d.startsWith('frame-ancestors'))
          ?.replace(new URL(app.platform.authUrl).origin, '{admin}') ?? '(no frame-ancestors)'
      );
    case 'content-type':
      return value.split(';')[0]!.trim().toLowerCase();
    case 'location':
    case 'x-store-app-reauthorize':
      return normaliseUrl(value, app);
    default:
      return value;
  }
}

interface CookieSeen {
  state: 'set' | 'cleared';
  attrs: string[];
}

/** Set-Cookie lines by name: set or cleared, attributes lower-cased (dates left out). */
function cookiesOf(lines: string[]): Record<string, CookieSeen> {
  const out: Record<string, CookieSeen> = {};
  for (const line of lines) {
    const [pair, ...rest] = line.split(';');
    const i = pair!.indexOf('=');
    const name = pair!.slice(0, i).trim();
    const value = pair!.slice(i + 1).trim();
    const attrs = rest.map((a) => a.trim().toLowerCase()).filter(Boolean);
    const cleared =
      value === '' ||
      attrs.includes('max-age=0') ||
      attrs.some((a) => a.startsWith('expires=thu, 01 jan 1970'));
    out[name] = {
      state: cleared ? 'cleared' : 'set',
      // Max-Age or Expires (either makes it persistent): compared as "persistent".
      attrs: [
        ...new Set(
          attrs
            .map((a) => (a.startsWith('expires=') || a.startsWith('max-age=') ? 'persistent' : a))
            .filter((a) => !cleared || a !== 'persistent'),
        ),
      ].sort(),
    };
  }
  return out;
}

interface Observation {
  status: number;
  code: string | null;
  headers: Partial<Record<(typeof COMPARED)[number], string>>;
  cookies: Record<string, CookieSeen>;
  rows: Rows;
  spans: Array<{ name: string; status: unknown; errorType: unknown }>;
  handled: number;
  reachedApp: string[];
}

async function runCase(k: ParityCase, app: ShellApp): Promise<void> {
  app.source = freshSource();
  app.handled.length = 0;
  // The setup's own spans are its business (a setup may wait for one); the case's come after.
  otel.reset();
  const state = k.setup ? await k.setup(app) : undefined;
  app.handled.length = 0;
  const before = await app.rows();
  app.reachedApp.length = 0;
  otel.reset();
  const answer = await k.run(app, state);
  const expected = k.expect;
  const spans = await spansSettle(expected.spans?.length);
  const after = await app.rows();

  const observed: Observation = {
    status: answer.status,
    code: answer.code,
    headers: {},
    cookies: cookiesOf(answer.setCookies),
    rows: Object.fromEntries(TABLES.map((t) => [t, after[t] - before[t]])) as Rows,
    spans: spans
      .map((s) => ({
        name: s.name,
        status: s.attributes['http.response.status_code'],
        errorType: s.attributes['error.type'] ?? null,
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    handled: app.handled.length,
    reachedApp: [...app.reachedApp],
  };
  for (const name of COMPARED) {
    const v = answer.headers[name];
    if (typeof v === 'string') observed.headers[name] = normaliseHeader(name, v, app);
  }
  seen.set(`${k.name} ${app.shell}`, observed);

  // The one-kit answer, on this shell.
  const where = `${app.shell}: ${k.name}`;
  // Every case is a kit route or an app route: none falls through to the app's own 404.
  expect(observed.reachedApp, `${where}: reached the app's fallback`).toEqual([]);
  expect(answer.status, `${where}: status (code ${answer.code})`).toBe(expected.status);
  if (expected.code !== undefined) expect(answer.code, `${where}: error code`).toBe(expected.code);
  for (const [name, e] of Object.entries(expected.headers ?? {})) {
    const raw = answer.headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (e === null) expect(value, `${where}: no ${name}`).toBeUndefined();
    else if (typeof e === 'string') expect(value, `${where}: ${name}`).toBe(e);
    else if (e instanceof RegExp) expect(value ?? '(absent)', `${where}: ${name}`).toMatch(e);
    else expect(e.test(value, app), `${where}: ${name} is ${e.describe}, got ${value}`).toBe(true);
  }
  for (const [name, e] of Object.entries(expected.cookies ?? {})) {
    const got = observed.cookies[name];
    if (e === null) {
      expect(got, `${where}: no Set-Cookie for ${name}`).toBeUndefined();
      continue;
    }
    expect(got?.state, `${where}: ${name} ${e.state}`).toBe(e.state);
    for (const a of e.attrs ?? []) {
      expect(got?.attrs, `${where}: ${name} attributes`).toContain(a);
    }
  }
  for (const [table, delta] of Object.entries(expected.rows ?? {})) {
    expect(observed.rows[table as Table], `${where}: rows of ${table}`).toBe(delta);
  }
  if (expected.spans) {
    const want = expected.spans
      .map((s) => ({
        name: s.name,
        ...(s.status === undefined ? {} : { status: s.status }),
        ...(s.errorType === undefined ? {} : { errorType: s.errorType }),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(observed.spans, `${where}: spans`).toMatchObject(want);
    expect(observed.spans, `${where}: spans`).toHaveLength(want.length);
  }
  await expected.check?.(app, answer, state as never);
}

const seen = new Map<string, Observation>();

beforeAll(async () => {
  otel = registerOtel();
  parity = await startParity();
}, 120_000);

afterAll(async () => {
  await parity?.close();
  await otel?.shutdown();
  // PARITY_OBSERVATIONS=<file>: what each shell did in each case, to read a failure side by side.
  const file = process.env.PARITY_OBSERVATIONS;
  if (file) writeFileSync(file, `${JSON.stringify(Object.fromEntries(seen), null, 2)}\n`);
});

describe('the table covers the install callback', () => {
  it('every outcome of CALLBACK_OUTCOMES has a case', () => {
    const covered = new Set(CASES.map((k) => k.outcome).filter(Boolean));
    expect([...covered].sort()).toEqual(Object.keys(CALLBACK_OUTCOMES).sort());
  });
  it('case names are unique', () => {
    expect(new Set(CASES.map((k) => k.name)).size).toBe(CASES.length);
  });
});

describe.each(CASES)('$name', (k) => {
  it.each(SHELLS)('%s', (shell) => runCase(k, parity.apps[shell]), 60_000);

  it('the same on both shells', () => {
    const [a, b] = SHELLS.map((s) => seen.get(`${k.name} ${s}`));
    expect(a, 'express ran to the end of its request').toBeDefined();
    expect(b, 'fetch ran to the end of its request').toBeDefined();
    expect(b).toEqual(a);
  });
});
