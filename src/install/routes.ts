/**
 * Express glue for the install flow: `GET {auth.path}` (begin) and
 * `GET {auth.callbackPath}` (callback). The OAuth pieces are the pure
 * functions of src/oauth; this file only reads the request, calls storage
 * and answers with a redirect or a page with a specific status.
 */
import { createHash } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import type { Logger } from 'pino';
import { STORAGE_RETRY_AFTER_SECONDS, StoreAppError } from '../errors/index.js';
import { storeLogger } from '../http/logger.js';
import type { ResolvedHttpOptions } from '../http/options.js';
import { normalizeRedirectTarget } from '../http/redirect-target.js';
import { frameAncestors } from '../http/security-headers.js';
import { startStoreSession } from '../http/session.js';
import { buildAuthorizeUrl } from '../oauth/authorize-url.js';
import { INVALID_CLIENT, INVALID_GRANT, OAuthError } from '../oauth/errors.js';
import type { ResolvedOAuthOptions } from '../oauth/options.js';
import { OAUTH_ENV } from '../oauth/options.js';
import { codeChallengeS256, createCodeVerifier } from '../oauth/pkce.js';
import { createState } from '../oauth/state.js';
import { requestToken } from '../oauth/token-endpoint.js';
import type { Storage } from '../storage/types.js';
import { ATTR, annotateActive, recordError, SPAN, spanHandler } from '../telemetry/index.js';
import { createCallbackLimits } from './callback-limits.js';
import { INSTALL_ERROR_CODES as E } from './errors.js';
import type { ResolvedAuthRouteOptions } from './options.js';
import { type PageInput, sendBreakout, sendPage as showPage } from './pages.js';
import {
  createPendingInstallCookie,
  hashState,
  MAX_PENDING_COOKIE_LENGTH,
  type PendingInstall,
  STATE_CLAIM_NAMESPACE,
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
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Longest query value accepted; real states, codes and ids are far shorter. */
const MAX_QUERY_VALUE = 2048;
/** claimOnce namespace of exchanged authorization codes (SHA-256, never the code). */
export const CODE_CLAIM_NAMESPACE = 'oauth-code';
/**
 * How long an exchanged code is remembered. The document does not give the
 * code lifetime; RFC 6749 §4.1.2 recommends at most 10 minutes, so a code
 * older than this is refused by the platform anyway. A duration on our own
 * clock, compared with our own clock.
 */
export const CODE_REPLAY_WINDOW_MS = 10 * 60_000;

type Query = Record<string, string>;

/** Query values as single strings; null when one is repeated, nested or absurdly long. */
function readQuery(req: Request): Query | null {
  const out: Query = {};
  for (const [k, v] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof v !== 'string' || v.length > MAX_QUERY_VALUE || k.length > 64) return null;
    out[k] = v;
  }
  return out;
}

/** An install page; an error page counts as a failed install (telemetry, by its code). */
function sendPage(res: Response, page: PageInput): void {
  if (page.status >= 400) recordError('install', page.code);
  showPage(res, page);
}

function isStorageFailure(err: unknown): boolean {
  return err instanceof StoreAppError && err.code === 'STORAGE_UNAVAILABLE';
}

/**
 * The install routes (`auth.path`, `auth.callbackPath`), added to `router`
 * (a new Router when not given). The kit adds them to its own router: a
 * nested Router costs every request that passes the mount a dispatch of its own.
 */
export function createInstallRoutes(deps: InstallRoutesDeps, router: Router = Router()): Router {
  const { config, storage } = deps;
  const ancestors = frameAncestors(config.embedded);
  const pending = createPendingInstallCookie(config.session.secret);
  const limits = createCallbackLimits({
    perSourcePerMinute: config.auth.maxCallbacksPerSourcePerMinute,
    inFlight: config.auth.maxExchangesInFlight,
  });
  const cookieOpts = {
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

  const beginUrlFor = (storeId: string | null, returnTo: string | null = null): string => {
    const u = new URL(config.auth.beginUrl);
    if (storeId) u.searchParams.set('store_id', storeId);
    if (returnTo) u.searchParams.set('return_to', returnTo);
    return u.toString();
  };

  const log = (res: Response): Logger => res.locals.log ?? deps.logger;

  const readPending = (req: Request): Promise<PendingInstall[]> =>
    pending.read(readCookie(req, config.auth.bindingCookieName, MAX_PENDING_COOKIE_LENGTH));
  /** Sets the pending-install cookie to `entries`, or clears it when none are left. */
  async function writePending(res: Response, entries: PendingInstall[]): Promise<() => void> {
    if (entries.length === 0) {
      return () => res.clearCookie(config.auth.bindingCookieName, cookieOpts);
    }
    const value = await pending.write(entries);
    return () =>
      res.cookie(config.auth.bindingCookieName, value, {
        ...cookieOpts,
        maxAge: config.auth.stateTtlSeconds * 1000,
      });
  }

  /**
   * Adds a pending install to this browser's cookie and redirects it to the
   * authorize page. Nothing is written server-side (see pending-cookie.ts).
   */
  async function redirectToAuthorize(
    existing: readonly PendingInstall[],
    res: Response,
    storeId: string | null,
    returnTo: string | null,
    retried: boolean,
  ): Promise<void> {
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
    (await writePending(res, [...others, entry]))();
    const url = buildAuthorizeUrl({
      authorizeUrl: config.oauth.authorizeUrl,
      clientId: config.oauth.clientId,
      redirectUri: config.auth.redirectUri,
      scopes: config.oauth.scopes,
      state,
      codeChallenge: codeChallengeS256(codeVerifier),
      storeId: config.oauth.sendStoreIdOnAuthorize ? storeId : null,
    });
    res.set('Cache-Control', 'no-store').redirect(302, url);
  }

  function storageDown(res: Response, err: unknown, retryUrl: string): void {
    log(res).error({ err }, 'install: database unavailable');
    res.set('Retry-After', String(STORAGE_RETRY_AFTER_SECONDS));
    sendPage(res, {
      status: 503,
      code: E.STORAGE_UNAVAILABLE,
      title: 'Temporarily unavailable',
      message: 'The app could not reach its database. Please try again in a moment.',
      retryUrl,
    });
  }

  router.get(config.auth.path, spanHandler(SPAN.installBegin, storeAppInstallBegin));
  router.get(config.auth.callbackPath, spanHandler(SPAN.installCallback, storeAppInstallCallback));

  async function storeAppInstallBegin(req: Request, res: Response): Promise<void> {
    const q = readQuery(req);
    if (q === null) {
      sendPage(res, {
        status: 400,
        code: E.REQUEST_INVALID,
        title: 'Invalid request',
        message: 'The install link is malformed. Start the install again from the store admin.',
      });
      return;
    }
    const storeId = q.store_id ?? null;
    if (storeId !== null && !UUID.test(storeId)) {
      sendPage(res, {
        status: 400,
        code: E.STORE_ID_INVALID,
        title: 'Invalid store',
        message:
          'The store id in the install link is not valid. Start the install again from the store admin.',
      });
      return;
    }
    const returnTo = normalizeRedirectTarget(q.return_to, config.appUrl);
    const dest = req.get('sec-fetch-dest');
    const inFrame =
      dest === 'iframe' || dest === 'frame' || (dest === undefined && q.embedded === '1');
    if (inFrame) {
      sendBreakout(res, beginUrlFor(storeId, returnTo), ancestors);
      return;
    }
    try {
      await redirectToAuthorize(await readPending(req), res, storeId, returnTo, false);
    } catch (err) {
      if (isStorageFailure(err)) return storageDown(res, err, beginUrlFor(storeId, returnTo));
      throw err;
    }
  }

  async function storeAppInstallCallback(req: Request, res: Response): Promise<void> {
    const l = log(res);
    const q = readQuery(req);
    if (q === null) {
      sendPage(res, {
        status: 400,
        code: E.REQUEST_INVALID,
        title: 'Invalid request',
        message: 'The install callback is malformed. Start the install again.',
        retryUrl: beginUrlFor(null),
      });
      return;
    }
    const queryStore = q.store_id !== undefined && UUID.test(q.store_id) ? q.store_id : null;
    const entries = await readPending(req);
    const entry = q.state ? pending.find(entries, q.state) : undefined;
    // This install is over whatever happens next: drop it from the cookie, keep other tabs' ones.
    const remaining = entries.filter((e) => e !== entry);
    const clearBinding = await writePending(res, remaining);

    if (q.error !== undefined) {
      const code = /^[a-z_]{1,64}$/.test(q.error) ? q.error : 'unknown_error';
      const begunFor = entry?.storeId ?? null;
      clearBinding();
      const retryUrl = beginUrlFor(begunFor ?? queryStore);
      l.info({ oauthError: code }, 'install: the platform returned an error');
      if (code === 'access_denied') {
        sendPage(res, {
          status: 403,
          code: E.ACCESS_DENIED,
          title: 'Installation cancelled',
          message:
            'The app was not installed because the permission request was declined. You can start again whenever you like.',
          retryUrl,
          retryLabel: 'Install the app',
        });
      } else {
        sendPage(res, {
          status: 400,
          code: E.PLATFORM_ERROR,
          title: 'Installation failed',
          message: `The store platform reported an error (${code}). Please try again.`,
          retryUrl,
        });
      }
      return;
    }

    const { state, code } = q;
    if (!state || !code) {
      sendPage(res, {
        status: 400,
        code: E.REQUEST_INVALID,
        title: 'Invalid request',
        message: 'The install callback is missing its parameters. Start the install again.',
        retryUrl: beginUrlFor(queryStore),
      });
      return;
    }
    if (q.store_id !== undefined && queryStore === null) {
      sendPage(res, {
        status: 400,
        code: E.STORE_ID_INVALID,
        title: 'Invalid store',
        message: 'The store id in the callback is not valid. Start the install again.',
        retryUrl: beginUrlFor(null),
      });
      return;
    }
    // No cookie at all: begun elsewhere (or the browser dropped it). A cookie whose
    // entries expired or do not match the state is the state's fault, below.
    if (readCookie(req, config.auth.bindingCookieName, MAX_PENDING_COOKIE_LENGTH) === null) {
      sendPage(res, {
        status: 400,
        code: E.BINDING_MISSING,
        title: 'Installation expired',
        message:
          'This install was not started in this browser, or it took too long. Start the install again.',
        retryUrl: beginUrlFor(queryStore),
      });
      return;
    }

    // Anyone can get a valid entry from GET /auth: bound what its callbacks cost (claim
    // rows, token requests under our client credentials) before any of it happens.
    if (entry) {
      const slot = limits.take(req.ip ?? req.socket.remoteAddress ?? 'unknown');
      if ('retryAfterSeconds' in slot) {
        l.warn(
          { event: 'install.rate_limited', retryAfterSeconds: slot.retryAfterSeconds },
          'install: callback refused (too many from this address, or exchanges in flight)',
        );
        // The cookie is left as it is: the same install may come back after Retry-After.
        res.set('Retry-After', String(slot.retryAfterSeconds));
        sendPage(res, {
          status: 429,
          code: E.RATE_LIMITED,
          title: 'Too many attempts',
          message: `The app is handling too many installs right now. Please try again in ${slot.retryAfterSeconds} seconds.`,
          retryUrl: beginUrlFor(entry.storeId ?? queryStore),
        });
        return;
      }
      res.once('close', slot.release);
    }

    // The entry came out of this browser's encrypted cookie (so the install was begun
    // here); the claim makes its state single-use across every instance.
    let claimed = false;
    if (entry) {
      try {
        claimed = await storage.claimOnce(
          STATE_CLAIM_NAMESPACE,
          entry.stateHash,
          new Date(entry.expiresAt * 1000),
        );
      } catch (err) {
        if (isStorageFailure(err)) return storageDown(res, err, beginUrlFor(queryStore));
        throw err;
      }
    }
    const record = claimed ? entry : undefined;
    if (!record) {
      clearBinding();
      sendPage(res, {
        status: 400,
        code: E.STATE_INVALID,
        title: 'Installation expired',
        message:
          'This install link is no longer valid (expired, already used, or started in another browser). Start the install again.',
        retryUrl: beginUrlFor(entry?.storeId ?? queryStore),
      });
      return;
    }
    if (record.storeId !== null && queryStore !== record.storeId) {
      clearBinding();
      l.warn('install: callback store differs from the store the install began for');
      sendPage(res, {
        status: 400,
        code: E.STORE_MISMATCH,
        title: 'Store mismatch',
        message:
          'The store that approved the install is not the one the install began for. Start again.',
        retryUrl: beginUrlFor(record.storeId),
      });
      return;
    }

    // Each code is exchanged once. A replay (the callback URL from a history or
    // a log, pasted into an install someone else began) stops here, before the
    // platform sees it: one that revokes on reuse (RFC 6749 §4.1.2) would
    // otherwise cut off the live installation the code created.
    let firstUse: boolean;
    try {
      firstUse = await storage.claimOnce(
        CODE_CLAIM_NAMESPACE,
        createHash('sha256').update(code).digest('base64url'),
        new Date(Date.now() + CODE_REPLAY_WINDOW_MS),
      );
    } catch (err) {
      if (isStorageFailure(err)) return storageDown(res, err, beginUrlFor(record.storeId));
      throw err;
    }
    if (!firstUse) {
      clearBinding();
      l.warn({ event: 'install.code_replayed' }, 'install: authorization code replayed; refused');
      sendPage(res, {
        status: 400,
        code: E.CODE_REPLAYED,
        title: 'Installation link already used',
        message:
          'This install link was already used. Start the install again from the store admin.',
        retryUrl: beginUrlFor(record.storeId ?? queryStore),
      });
      return;
    }

    let token: Awaited<ReturnType<typeof requestToken>>;
    try {
      token = await requestToken(
        {
          url: config.oauth.tokenUrl,
          clientId: config.oauth.clientId,
          clientSecret: config.oauth.clientSecret,
          encoding: config.oauth.tokenRequestEncoding,
        },
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: config.auth.redirectUri,
          code_verifier: record.codeVerifier,
        },
        { timeoutMs: config.oauth.tokenTimeoutMs, fetch: deps.fetch },
      );
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (err.code === INVALID_GRANT && !record.retried) {
        // A stale or reused code: one fresh attempt, marked so it cannot loop.
        l.info('install: code refused (invalid_grant), restarting the install once');
        try {
          await redirectToAuthorize(remaining, res, record.storeId, record.returnTo, true);
        } catch (e) {
          if (isStorageFailure(e)) return storageDown(res, e, beginUrlFor(record.storeId));
          throw e;
        }
        return;
      }
      clearBinding();
      if (err.code === INVALID_GRANT) {
        l.warn('install: code refused again after a restart');
        sendPage(res, {
          status: 400,
          code: E.CODE_REJECTED,
          title: 'Installation failed',
          message:
            'The store platform refused the authorization twice. Please start the install again.',
          retryUrl: beginUrlFor(record.storeId ?? queryStore),
        });
        return;
      }
      if (err.code === INVALID_CLIENT) {
        // Our own credentials were refused: no retry can help, the operator
        // has to fix the configuration. The log names the settings; the
        // merchant's page names none (and no page ever shows a secret).
        l.error(
          { oauthError: err.code, settings: [OAUTH_ENV.clientSecret, OAUTH_ENV.clientId] },
          `install: the platform refused the app's client credentials (invalid_client); ${OAUTH_ENV.clientSecret} (or oauth.clientSecret) is wrong or belongs to another app: copy the client secret and id from the developer dashboard into ${OAUTH_ENV.clientSecret} and ${OAUTH_ENV.clientId}, then restart`,
        );
        sendPage(res, {
          status: 500,
          code: E.CLIENT_REJECTED,
          title: 'App not set up correctly',
          message:
            "The store platform did not accept this app's credentials, so the install cannot finish. Nothing was saved. The app's developer has to correct its configuration; trying again will not help until then.",
        });
        return;
      }
      l.error({ err, oauthError: err.code }, 'install: token exchange failed');
      sendPage(res, {
        status: 502,
        code: E.TOKEN_EXCHANGE_FAILED,
        title: 'Store platform unavailable',
        message:
          'The app could not complete the install with the store platform. Nothing was saved; please try again.',
        retryUrl: beginUrlFor(record.storeId ?? queryStore),
      });
      return;
    }

    const storeId = token.storeId ?? queryStore;
    if (
      storeId === null ||
      !UUID.test(storeId) ||
      (queryStore !== null && storeId !== queryStore)
    ) {
      clearBinding();
      l.error('install: the token response names no store, or another store than the callback');
      sendPage(res, {
        status: 502,
        code: E.TOKEN_EXCHANGE_FAILED,
        title: 'Installation failed',
        message: 'The store platform answered inconsistently. Nothing was saved; please try again.',
        retryUrl: beginUrlFor(record.storeId ?? queryStore),
      });
      return;
    }
    // RFC 6749 §5.1: no scope in the response means the requested scope was granted.
    const scopes = token.scopeMissing ? [...config.oauth.scopes] : token.scopes;
    const sl = storeLogger(l, storeId);
    annotateActive(() => ({ [ATTR.storeId]: storeId }));
    // A narrower grant is never stored as if it were the install the app asked for.
    const missingScopes = config.oauth.scopes.filter((s) => !scopes.includes(s));
    if (missingScopes.length > 0) {
      sl.warn(
        { missingScopes, policy: config.auth.narrowerScopes },
        'install: the merchant granted fewer scopes than requested',
      );
      if (config.auth.narrowerScopes === 'refuse') {
        clearBinding();
        sendPage(res, {
          status: 403,
          code: E.SCOPES_NOT_GRANTED,
          title: 'Permissions missing',
          message:
            'The app needs every permission it asked for, and some were not granted. Nothing was saved; install again and approve all permissions.',
          retryUrl: beginUrlFor(storeId),
          retryLabel: 'Install the app',
        });
        return;
      }
    }

    if (config.auth.beforeInstall) {
      try {
        await config.auth.beforeInstall({ storeId, scopes, missingScopes });
      } catch (err) {
        clearBinding();
        sl.error({ err }, 'install: beforeInstall hook failed; nothing stored');
        sendPage(res, {
          status: 500,
          code: E.HOOK_FAILED,
          title: 'Installation failed',
          message:
            'The app could not finish setting up for your store. Nothing was saved; please try again.',
          retryUrl: beginUrlFor(storeId),
        });
        return;
      }
    }

    let installation: Awaited<ReturnType<Storage['installations']['upsert']>>;
    try {
      // No read first: a row whose tokens no longer decrypt (a lost key) must
      // still be replaced, since reinstalling is how the merchant recovers.
      // The platform's Date stamps the install in the platform's clock: the
      // app.uninstalled event's time is compared with it (docs/platform-contract.md).
      installation = await storage.installations.upsert(
        storeId,
        {
          scopes,
          accessToken: token.accessToken,
          refreshToken: token.refreshToken,
          accessTokenExpiresAt: new Date(Date.now() + token.expiresIn * 1000),
        },
        { platformInstalledAt: config.oauth.installTimeFromServerDate ? token.serverDate : null },
      );
      deps.onInstalled?.(storeId);
      await startStoreSession(req, storeId);
    } catch (err) {
      clearBinding();
      if (isStorageFailure(err)) return storageDown(res, err, beginUrlFor(storeId));
      throw err;
    }
    clearBinding();
    // The upsert starts a new row at version 1 and bumps an existing one.
    const reinstall = installation.version > 1;
    sl.info({ scopes, reinstall }, reinstall ? 'store reinstalled' : 'store installed');

    if (config.auth.afterInstall) {
      try {
        await config.auth.afterInstall({
          storeId,
          scopes,
          missingScopes,
          installation,
          reinstall,
        });
      } catch (err) {
        sl.error({ err }, 'install: afterInstall hook failed; the installation is kept');
        sendPage(res, {
          status: 500,
          code: E.HOOK_FAILED,
          title: 'Setup incomplete',
          message:
            'The app was installed but could not finish setting up for your store. Please try again.',
          retryUrl: beginUrlFor(storeId),
        });
        return;
      }
    }

    res.set('Cache-Control', 'no-store').redirect(302, homeUrl(config, storeId, record.returnTo));
  }

  return router;
}

/** Where the merchant lands after installing. */
function homeUrl(config: InstallRoutesConfig, storeId: string, returnTo: string | null): string {
  if (config.embedded.enabled) {
    return config.embedded.adminAppUrl
      .replaceAll('{client_id}', encodeURIComponent(config.oauth.clientId))
      .replaceAll('{store_id}', encodeURIComponent(storeId));
  }
  const app = new URL(config.appUrl);
  const base = app.pathname.replace(/\/+$/, '');
  const u = new URL(app.origin + base + (returnTo ?? '/'));
  if (!returnTo) u.searchParams.set('store_id', storeId);
  return u.toString();
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

/** One cookie's value from the Cookie header (no cookie-parser needed). */
function readCookie(req: Request, name: string, maxLength = 256): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    if (part.slice(0, i).trim() !== name) continue;
    const raw = part.slice(i + 1).trim();
    try {
      const v = decodeURIComponent(raw);
      return v.length > 0 && v.length <= maxLength ? v : null;
    } catch {
      return null;
    }
  }
  return null;
}
