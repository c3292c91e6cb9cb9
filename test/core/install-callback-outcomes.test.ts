/**
 * The install callback's table of outcomes, walked row by row without a
 * server: the pure decisions (request → outcome), then each outcome's answer
 * (status, error code, what happens to the pending-install cookie). The flows
 * that reach each row over real sockets are in test/install and test/security.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/index.js';
import { answer } from '../../src/install/callback.js';
import {
  CALLBACK_OUTCOMES,
  type CallbackOutcome,
  type CallbackOutcomeKind,
  checkGrant,
  checkStoreMatch,
  decideCallback,
} from '../../src/install/callback-outcomes.js';
import { createInstallContext } from '../../src/install/context.js';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import type { PendingInstall } from '../../src/install/pending-cookie.js';
import type { Storage } from '../../src/storage/types.js';
import { offlineKitOptions } from '../helpers/config.js';

const STORE = '6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10';
const OTHER = '0b6f7a11-2c3d-4e5f-8a9b-1c2d3e4f5a6b';
const entry: PendingInstall = {
  stateHash: 'h',
  codeVerifier: 'v',
  storeId: STORE,
  returnTo: null,
  retried: false,
  expiresAt: 4_000_000_000,
};
const other: PendingInstall = { ...entry, stateHash: 'other-tab' };

const config = resolveConfig(offlineKitOptions({ session: { secret: 's'.repeat(32) } }), {});
const ctx = createInstallContext({
  config,
  storage: {} as Storage,
  logger: pino({ level: 'silent' }),
});
const log = pino({ level: 'silent' });

describe('decideCallback: the outcomes decided from the request alone', () => {
  const ok = { state: 's', code: 'c', store_id: STORE };
  const rows: Array<
    [string, Parameters<typeof decideCallback>[0], CallbackOutcome['kind'] | 'proceed']
  > = [
    [
      'malformed query (repeated, nested or long value)',
      { query: null, hasBindingCookie: true, entry },
      'malformed',
    ],
    [
      'platform error',
      { query: { error: 'server_error', state: 's' }, hasBindingCookie: true, entry },
      'platform_error',
    ],
    [
      'declined consent',
      { query: { error: 'access_denied' }, hasBindingCookie: false, entry: undefined },
      'platform_error',
    ],
    ['no code', { query: { state: 's' }, hasBindingCookie: true, entry }, 'missing_params'],
    ['no state', { query: { code: 'c' }, hasBindingCookie: true, entry }, 'missing_params'],
    [
      'store id malformed',
      { query: { ...ok, store_id: 'x/../y' }, hasBindingCookie: true, entry },
      'store_id_invalid',
    ],
    [
      'no pending-install cookie',
      { query: ok, hasBindingCookie: false, entry: undefined },
      'binding_missing',
    ],
    [
      'cookie without this state',
      { query: ok, hasBindingCookie: true, entry: undefined },
      'state_invalid',
    ],
    ['genuine entry', { query: ok, hasBindingCookie: true, entry }, 'proceed'],
  ];
  it.each(rows)('%s', (_name, input, kind) => {
    expect(decideCallback(input).kind).toBe(kind);
  });

  it('a platform error code outside [a-z_] is never echoed', () => {
    const o = decideCallback({
      query: { error: '<script>' },
      hasBindingCookie: false,
      entry: undefined,
    });
    expect(o).toMatchObject({ kind: 'platform_error', error: 'unknown_error' });
  });

  it('the retry link begins for the store the install began for, else the callback store', () => {
    const o = decideCallback({
      query: { error: 'x', store_id: OTHER },
      hasBindingCookie: true,
      entry,
    });
    expect(o).toMatchObject({ storeId: STORE });
  });
});

describe('checkStoreMatch and checkGrant: the outcomes decided after a claim or the exchange', () => {
  it('a callback for another store than the install began for is a mismatch', () => {
    expect(checkStoreMatch(entry, OTHER)?.kind).toBe('store_mismatch');
    expect(checkStoreMatch(entry, null)?.kind).toBe('store_mismatch');
    expect(checkStoreMatch(entry, STORE)).toBeNull();
    expect(checkStoreMatch({ ...entry, storeId: null }, OTHER)).toBeNull();
  });

  const base = { queryStore: STORE, retryStore: STORE, requested: ['a', 'b'] };
  it.each([
    [
      'no store anywhere',
      { storeId: null, scopes: ['a', 'b'], scopeMissing: false },
      { ...base, queryStore: null },
      'inconsistent_store',
    ],
    [
      'tokens for another store',
      { storeId: OTHER, scopes: ['a', 'b'], scopeMissing: false },
      base,
      'inconsistent_store',
    ],
    [
      'narrower grant refused',
      { storeId: STORE, scopes: ['a'], scopeMissing: false },
      base,
      'scopes_refused',
    ],
  ] as const)('%s', (_n, token, c, kind) => {
    const r = checkGrant(
      { ...token, scopes: [...token.scopes] },
      { ...c, requested: [...c.requested], narrowerScopes: 'refuse' },
    );
    expect('kind' in r && r.kind).toBe(kind);
  });

  it('a narrower grant under narrowerScopes record, and a response without scope', () => {
    const narrow = checkGrant(
      { storeId: STORE, scopes: ['a'], scopeMissing: false },
      { ...base, narrowerScopes: 'record' },
    );
    expect(narrow).toEqual({ storeId: STORE, scopes: ['a'], missingScopes: ['b'] });
    const all = checkGrant(
      { storeId: null, scopes: [], scopeMissing: true },
      { ...base, narrowerScopes: 'refuse' },
    );
    expect(all).toEqual({ storeId: STORE, scopes: ['a', 'b'], missingScopes: [] });
  });
});

/** One outcome of each kind: the row under test. */
const SAMPLES: { [K in CallbackOutcomeKind]: Extract<CallbackOutcome, { kind: K }> } = {
  malformed: { kind: 'malformed' },
  platform_error: { kind: 'platform_error', error: 'server_error', storeId: STORE },
  missing_params: { kind: 'missing_params', storeId: STORE },
  store_id_invalid: { kind: 'store_id_invalid' },
  binding_missing: { kind: 'binding_missing', storeId: STORE },
  state_invalid: { kind: 'state_invalid', storeId: STORE },
  rate_limited: { kind: 'rate_limited', retryAfterSeconds: 7, storeId: STORE },
  storage_down: { kind: 'storage_down', storeId: STORE, err: new Error('db'), binding: 'keep' },
  store_mismatch: { kind: 'store_mismatch', storeId: STORE },
  code_replayed: { kind: 'code_replayed', storeId: STORE },
  restart: { kind: 'restart', entry },
  code_rejected: { kind: 'code_rejected', storeId: STORE },
  client_rejected: { kind: 'client_rejected' },
  exchange_failed: { kind: 'exchange_failed', storeId: STORE },
  inconsistent_store: { kind: 'inconsistent_store', storeId: STORE },
  scopes_refused: { kind: 'scopes_refused', storeId: STORE, missingScopes: ['b'] },
  before_hook_failed: { kind: 'before_hook_failed', storeId: STORE },
  after_hook_failed: { kind: 'after_hook_failed', storeId: STORE },
  installed: { kind: 'installed', location: 'https://app.example.com/?store_id=x' },
};

describe('CALLBACK_OUTCOMES: each row as the shell answers it', () => {
  const kinds = Object.keys(CALLBACK_OUTCOMES) as CallbackOutcomeKind[];

  it.each(kinds)('%s', async (kind) => {
    const row = CALLBACK_OUTCOMES[kind];
    const r = await answer(ctx, log, SAMPLES[kind], [other]);
    expect(r.status).toBe(row.status);
    expect(r.headers['x-store-app-error']).toBe(row.code ?? undefined);
    expect(r.headers['cache-control']).toBe('no-store');
    const binding = r.cookies.filter((c) => c.name === config.auth.bindingCookieName);
    if (row.binding === 'keep') expect(binding).toEqual([]);
    else {
      // The other tab's install stays pending: the cookie is rewritten, not cleared.
      expect(binding).toHaveLength(1);
      const kept = await ctx.pending.read(binding[0]!.value);
      expect(kept.map((e) => e.stateHash)).toContain('other-tab');
      expect(kept).toHaveLength(row.binding === 'restart' ? 2 : 1);
    }
    if (row.status === 302) expect(r.headers.location).toBeTruthy();
    if (r.body.kind === 'html') {
      // A page never shows the app's secret.
      expect(r.body.value).not.toContain(config.oauth.clientSecret);
    }
  });

  it('the last pending install gone: the cookie is cleared', async () => {
    const r = await answer(ctx, log, SAMPLES.state_invalid, []);
    expect(r.cookies).toEqual([
      expect.objectContaining({ name: config.auth.bindingCookieName, value: '', maxAgeSeconds: 0 }),
    ]);
  });

  it('declined consent is a 403 with its own code; a rate limit says when to come back', async () => {
    const denied = await answer(
      ctx,
      log,
      { ...SAMPLES.platform_error, error: 'access_denied' },
      [],
    );
    expect(denied.status).toBe(403);
    expect(denied.headers['x-store-app-error']).toBe(E.ACCESS_DENIED);
    const limited = await answer(ctx, log, SAMPLES.rate_limited, []);
    expect(limited.headers['retry-after']).toBe('7');
    const down = await answer(ctx, log, SAMPLES.storage_down, []);
    expect(down.headers['retry-after']).toBeTruthy();
  });

  it('restart redirects to the authorize page with a fresh attempt marked retried', async () => {
    const r = await answer(ctx, log, SAMPLES.restart, []);
    expect(r.headers.location?.startsWith(config.oauth.authorizeUrl)).toBe(true);
    const [fresh] = await ctx.pending.read(r.cookies[0]!.value);
    expect(fresh).toMatchObject({ storeId: STORE, retried: true });
  });

  it('the client-credentials page offers no retry (retrying cannot help)', async () => {
    const r = await answer(ctx, log, SAMPLES.client_rejected, []);
    expect(r.body.kind === 'html' && r.body.value).not.toContain('class="button"');
  });
});
