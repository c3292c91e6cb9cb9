/**
 * What install begin and callback share, without a framework: the resolved
 * settings, the pending-install cookie, the callback limits, and the few
 * responses both give (authorize redirect, a page, database unavailable).
 */

import type { Logger } from 'pino';
import type { PlatformClock } from '../client/platform-clock.js';
import type { CoreCookie, CoreRequest, CoreResponse } from '../core/http.js';
import { STORAGE_RETRY_AFTER_SECONDS } from '../errors/index.js';
import type { ResolvedHttpOptions } from '../http/options.js';
import { buildAuthorizeUrl } from '../oauth/authorize-url.js';
import type { ResolvedOAuthOptions } from '../oauth/options.js';
import { codeChallengeS256, createCodeVerifier } from '../oauth/pkce.js';
import { createState } from '../oauth/state.js';
import type { Storage } from '../storage/types.js';
import { recordError } from '../telemetry/index.js';
import { type CallbackLimits, createCallbackLimits } from './callback-limits.js';
import { INSTALL_ERROR_CODES as E } from './errors.js';
import type { ResolvedAuthRouteOptions } from './options.js';
import { type PageInput, pageResponse } from './pages.js';
import {
  createPendingInstallCookie,
  hashState,
  MAX_PENDING_COOKIE_LENGTH,
  type PendingInstall,
  type PendingInstallCookie,
} from './pending-cookie.js';

/** The resolved settings the install routes read (a slice of the kit's configuration). */
export interface InstallRoutesConfig {
  appUrl: string;
  oauth: ResolvedOAuthOptions;
  auth: ResolvedAuthRouteOptions;
  session: Pick<ResolvedHttpOptions['session'], 'secure' | 'secret'>;
  embedded: ResolvedHttpOptions['embedded'];
}

export interface InstallRoutesDeps {
  config: InstallRoutesConfig;
  storage: Storage;
  logger: Logger;
  /** The fetch used for the token exchange (tests). @default globalThis.fetch */
  fetch?: typeof fetch;
  /**
   * Called once the new tokens are stored, so in-memory copies of the old
   * installation (the token manager's cache) are dropped at once.
   */
  onInstalled?: (storeId: string) => void;
  /**
   * The frame-ancestors of the kit's pages (`pageFrameAncestors(config)`);
   * undefined: the pages carry no frame-ancestors directive.
   */
  pageFrameAncestors?: readonly string[];
  /**
   * The platform's clock (estimated from its `Date` headers): the exchange's
   * answer feeds it, and a token's expiry counts in it.
   */
  platformClock?: PlatformClock;
}

/** Install begin and callback's shared state, built once per kit. */
export interface InstallContext {
  readonly deps: InstallRoutesDeps;
  readonly config: InstallRoutesConfig;
  readonly pending: PendingInstallCookie;
  readonly limits: CallbackLimits;
  /** The begin route's URL for a fresh attempt (the pages' "try again"). */
  beginUrlFor(storeId: string | null, returnTo?: string | null): string;
  /** The pending installs in this request's cookie ([] when none or not ours). */
  readPending(req: CoreRequest): Promise<PendingInstall[]>;
  /** True when the request carries a (plausible) pending-install cookie at all. */
  hasBindingCookie(req: CoreRequest): boolean;
  /** The pending-install cookie holding `entries`, or clearing it when none are left. */
  bindingCookie(entries: readonly PendingInstall[]): Promise<CoreCookie>;
  /** Adds a pending install to the cookie and redirects to the authorize page. */
  authorizeRedirect(
    existing: readonly PendingInstall[],
    storeId: string | null,
    returnTo: string | null,
    retried: boolean,
  ): Promise<CoreResponse>;
  /** A kit page; an error page counts as a failed install (telemetry, by its code). */
  page(page: PageInput, headers?: Record<string, string>): CoreResponse;
  /** 503 with Retry-After: the database could not be reached. */
  storageDown(log: Logger, err: unknown, retryUrl: string): CoreResponse;
}

/**
 * How to give the install callback its client's address (`kit.fetch` gets none from
 * a `Request`): said when a callback arrives without one.
 */
export const NO_ADDRESS_FIX =
  "Pass the client's address to kit.fetch(request, { remoteAddress }): the runtime's " +
  '(Hono on Node: c.env.incoming.socket.remoteAddress; Bun: server.requestIP(request); ' +
  'Deno: info.remoteAddr.hostname), or behind a reverse proxy the address your trusted ' +
  'proxy reports (e.g. the last hop it appends to X-Forwarded-For), so each caller has ' +
  'its own install-callback budget (docs/runtimes.md).';

/** Longest query value accepted; real states, codes and ids are far shorter. */
const MAX_QUERY_VALUE = 2048;

/** Query values as single strings; null when one is repeated, nested or absurdly long. */
export function readQuery(req: CoreRequest): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const k of req.queryKeys()) {
    const all = req.queryAll(k);
    const v = all[0];
    if (all.length !== 1 || v === undefined || v.length > MAX_QUERY_VALUE || k.length > 64) {
      return null;
    }
    out[k] = v;
  }
  return out;
}

/** Builds the shared install state from the kit's resolved settings. */
export function createInstallContext(deps: InstallRoutesDeps): InstallContext {
  const { config } = deps;
  const pending = createPendingInstallCookie(config.session.secret);
  const cookieBase = {
    name: config.auth.bindingCookieName,
    httpOnly: true,
    // Top-level cookie: Lax is sent on the platform's redirect back to us.
    sameSite: 'lax' as const,
    secure: config.session.secure,
    // Sent to the begin route (which adds to the list other tabs started) and the
    // callback, nowhere else the two do not share.
    path: commonPath(
      new URL(config.auth.beginUrl).pathname,
      new URL(config.auth.redirectUri).pathname,
    ),
  };
  const ctx: InstallContext = {
    deps,
    config,
    pending,
    limits: createCallbackLimits({
      perSourcePerMinute: config.auth.maxCallbacksPerSourcePerMinute,
      inFlight: config.auth.maxExchangesInFlight,
      onSharedOverBudget: (failed) =>
        deps.logger.warn(
          { event: 'install.shared_budget', failed, setting: 'remoteAddress' },
          `install: ${failed} callbacks without a client address failed within a minute; they now go through one at a time. ${NO_ADDRESS_FIX}`,
        ),
    }),
    beginUrlFor(storeId, returnTo = null) {
      const u = new URL(config.auth.beginUrl);
      if (storeId) u.searchParams.set('store_id', storeId);
      if (returnTo) u.searchParams.set('return_to', returnTo);
      return u.toString();
    },
    readPending: (req) => pending.read(bindingValue(req, cookieBase.name)),
    hasBindingCookie: (req) => bindingValue(req, cookieBase.name) !== null,
    async bindingCookie(entries) {
      if (entries.length === 0) return { ...cookieBase, value: '', maxAgeSeconds: 0 };
      const value = await pending.write(entries);
      return { ...cookieBase, value, maxAgeSeconds: config.auth.stateTtlSeconds };
    },
    authorizeRedirect: (existing, storeId, returnTo, retried) =>
      authorizeRedirect(ctx, existing, storeId, returnTo, retried),
    page(page, headers = {}) {
      if (page.status >= 400) recordError('install', page.code);
      const r = pageResponse(page, deps.pageFrameAncestors);
      Object.assign(r.headers, headers);
      return r;
    },
    storageDown(log, err, retryUrl) {
      log.error({ err }, 'install: database unavailable');
      return ctx.page(
        {
          status: 503,
          code: E.STORAGE_UNAVAILABLE,
          title: 'Temporarily unavailable',
          message: 'The app could not reach its database. Please try again in a moment.',
          retryUrl,
        },
        { 'retry-after': String(STORAGE_RETRY_AFTER_SECONDS) },
      );
    },
  };
  return ctx;
}

/**
 * Adds a pending install to this browser's cookie and redirects it to the
 * authorize page. Nothing is written server-side (see pending-cookie.ts).
 */
async function authorizeRedirect(
  ctx: InstallContext,
  existing: readonly PendingInstall[],
  storeId: string | null,
  returnTo: string | null,
  retried: boolean,
): Promise<CoreResponse> {
  const { config } = ctx;
  const state = createState();
  const codeVerifier = createCodeVerifier();
  const entry: PendingInstall = {
    stateHash: hashState(state),
    codeVerifier,
    storeId,
    returnTo,
    retried,
    expiresAt: Math.floor(Date.now() / 1000) + config.auth.stateTtlSeconds,
  };
  // Other tabs' installs stay pending next to this one.
  const others = existing.filter((e) => e.stateHash !== entry.stateHash);
  const cookie = await ctx.bindingCookie([...others, entry]);
  const url = buildAuthorizeUrl({
    authorizeUrl: config.oauth.authorizeUrl,
    clientId: config.oauth.clientId,
    redirectUri: config.auth.redirectUri,
    scopes: config.oauth.scopes,
    state,
    codeChallenge: codeChallengeS256(codeVerifier),
    storeId: config.oauth.sendStoreIdOnAuthorize ? storeId : null,
  });
  return { ...redirectTo(url), cookies: [cookie] };
}

/** A 302 that no cache keeps. */
export function redirectTo(location: string): CoreResponse {
  return {
    status: 302,
    headers: { location, 'cache-control': 'no-store' },
    cookies: [],
    body: { kind: 'empty' },
  };
}

/** The pending-install cookie's raw value, or null when absent, empty or too long. */
function bindingValue(req: CoreRequest, name: string): string | null {
  const v = req.cookie(name);
  return v !== undefined && v.length > 0 && v.length <= MAX_PENDING_COOKIE_LENGTH ? v : null;
}

/** The longest path of whole segments both paths start with (`/auth` for `/auth`, `/auth/callback`). */
function commonPath(a: string, b: string): string {
  const x = a.split('/');
  const y = b.split('/');
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  const shared = x.slice(0, i).join('/');
  return shared === '' ? '/' : shared;
}
