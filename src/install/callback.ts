/**
 * `GET {auth.callbackPath}` without a framework: the effectful steps (limits,
 * state and code claims, token exchange, hooks, storing) around the pure
 * decisions of ./callback-outcomes.ts, each step ending in a `CallbackOutcome`
 * that `answer` turns into a `CoreResponse` from the outcome table.
 */

import type { Logger } from 'pino';
import type { CoreHandler, CoreRequest, CoreResponse } from '../core/http.js';
import { sha256, toBase64url } from '../crypto/primitives.js';
import { isStorageFailure } from '../errors/index.js';
import { storeLogger } from '../http/store-logger.js';
import { INVALID_CLIENT, INVALID_GRANT, OAuthError } from '../oauth/errors.js';
import { OAUTH_ENV } from '../oauth/options.js';
import { requestToken, type TokenResponse } from '../oauth/token-endpoint.js';
import { ATTR, annotateActive } from '../telemetry/index.js';
import {
  type CallbackOutcome,
  type CallbackProceed,
  checkGrant,
  checkStoreMatch,
  decideCallback,
  type Grant,
  outcomeRow,
} from './callback-outcomes.js';
import { type InstallContext, readQuery, redirectTo } from './context.js';
import type { PageInput } from './pages.js';
import { type PendingInstall, STATE_CLAIM_NAMESPACE } from './pending-cookie.js';

/** claimOnce namespace of exchanged authorization codes (SHA-256, never the code). */
export const CODE_CLAIM_NAMESPACE = 'oauth-code';
/**
 * How long an exchanged code is remembered. The document does not give the
 * code lifetime; RFC 6749 §4.1.2 recommends at most 10 minutes, so a code
 * older than this is refused by the platform anyway. A duration on our own
 * clock, compared with our own clock.
 */
export const CODE_REPLAY_WINDOW_MS = 10 * 60_000;

/** The install callback as a core handler. */
export function createInstallCallback(ctx: InstallContext): CoreHandler {
  return async function storeAppInstallCallback(req) {
    const query = readQuery(req);
    if (query === null) return answer(ctx, req.log, { kind: 'malformed' }, []);
    const entries = await ctx.readPending(req);
    const entry = query.state ? ctx.pending.find(entries, query.state) : undefined;
    // This install is over whatever happens next: drop it from the cookie, keep other tabs' ones.
    const remaining = entries.filter((e) => e !== entry);
    const decided = decideCallback({ query, hasBindingCookie: ctx.hasBindingCookie(req), entry });
    if (decided.kind === 'platform_error') {
      req.log.info({ oauthError: decided.error }, 'install: the platform returned an error');
    }
    if (decided.kind !== 'proceed') return answer(ctx, req.log, decided, remaining);
    // Anyone can get a valid entry from GET /auth: bound what its callbacks cost (claim
    // rows, token requests under our client credentials) before any of it happens.
    const slot = await ctx.limits.take(req.remoteAddress);
    if ('retryAfterSeconds' in slot) {
      req.log.warn(
        { event: 'install.rate_limited', retryAfterSeconds: slot.retryAfterSeconds },
        'install: callback refused (too many failed callbacks from this address, or exchanges in flight)',
      );
      const { retryAfterSeconds } = slot;
      const storeId = decided.entry.storeId ?? decided.queryStore;
      return answer(ctx, req.log, { kind: 'rate_limited', retryAfterSeconds, storeId }, remaining);
    }
    let failed = true;
    try {
      const outcome = await complete(ctx, req, decided);
      failed = countsAsFailure(outcome);
      const r = await answer(ctx, req.log, outcome, remaining);
      return { ...r, onClose: () => slot.release(failed) };
    } catch (err) {
      slot.release(failed);
      throw err;
    }
  };
}

/**
 * Whether an outcome spends its source's callback budget: a failed exchange or a
 * refusal after the limit does; an exchange that went through does not (whatever the
 * hooks then did), nor does the app's own database failing.
 */
function countsAsFailure(outcome: CallbackOutcome): boolean {
  switch (outcome.kind) {
    case 'installed':
    case 'before_hook_failed':
    case 'after_hook_failed':
    case 'storage_down':
      return false;
    default:
      return true;
  }
}

/** A storage step: its value, or `storage_down` when the database is unreachable. */
async function storageStep<T>(
  step: () => Promise<T>,
  storeId: string | null,
  binding: 'keep' | 'update',
): Promise<T | CallbackOutcome> {
  try {
    return await step();
  } catch (err) {
    if (isStorageFailure(err)) return { kind: 'storage_down', storeId, err, binding };
    throw err;
  }
}

/** From a genuine entry to the installation: claims, exchange, checks, storing. */
async function complete(
  ctx: InstallContext,
  req: CoreRequest,
  p: CallbackProceed,
): Promise<CallbackOutcome> {
  const { entry, queryStore } = p;
  const { storage } = ctx.deps;
  // The entry came out of this browser's encrypted cookie (so the install was begun
  // here); the claim makes its state single-use across every instance.
  const expires = new Date(entry.expiresAt * 1000);
  const claimed = await storageStep(
    () => storage.claimOnce(STATE_CLAIM_NAMESPACE, entry.stateHash, expires),
    queryStore,
    'keep',
  );
  if (typeof claimed !== 'boolean') return claimed;
  if (!claimed) return { kind: 'state_invalid', storeId: entry.storeId ?? queryStore };
  const mismatch = checkStoreMatch(entry, queryStore);
  if (mismatch) {
    req.log.warn('install: callback store differs from the store the install began for');
    return mismatch;
  }
  // Each code is exchanged once. A replay (the callback URL from a history or
  // a log, pasted into an install someone else began) stops here, before the
  // platform sees it: one that revokes on reuse (RFC 6749 §4.1.2) would
  // otherwise cut off the live installation the code created.
  const codeHash = toBase64url(sha256(p.code));
  const replayUntil = new Date(Date.now() + CODE_REPLAY_WINDOW_MS);
  const firstUse = await storageStep(
    () => storage.claimOnce(CODE_CLAIM_NAMESPACE, codeHash, replayUntil),
    entry.storeId,
    'keep',
  );
  if (typeof firstUse !== 'boolean') return firstUse;
  if (!firstUse) {
    req.log.warn(
      { event: 'install.code_replayed' },
      'install: authorization code replayed; refused',
    );
    return { kind: 'code_replayed', storeId: entry.storeId ?? queryStore };
  }
  const token = await exchange(ctx, req.log, p);
  if ('kind' in token) return token;
  const grant = checkGrant(token, {
    queryStore,
    retryStore: entry.storeId ?? queryStore,
    requested: ctx.config.oauth.scopes,
    narrowerScopes: ctx.config.auth.narrowerScopes,
  });
  if ('kind' in grant) {
    if (grant.kind === 'inconsistent_store') {
      req.log.error(
        'install: the token response names no store, or another store than the callback',
      );
    } else if (grant.kind === 'scopes_refused') {
      narrowerGrantWarning(ctx, req.log, grant.storeId, grant.missingScopes);
    }
    return grant;
  }
  return store(ctx, req, grant, token, entry);
}

function narrowerGrantWarning(
  ctx: InstallContext,
  log: Logger,
  storeId: string,
  missingScopes: string[],
): void {
  storeLogger(log, storeId).warn(
    { missingScopes, policy: ctx.config.auth.narrowerScopes },
    'install: the merchant granted fewer scopes than requested',
  );
}

/** The code exchange; an OAuth refusal is an outcome, anything else throws. */
async function exchange(
  ctx: InstallContext,
  log: Logger,
  { code, entry, queryStore }: CallbackProceed,
): Promise<TokenResponse | CallbackOutcome> {
  const { oauth, auth } = ctx.config;
  try {
    const sentAt = Date.now();
    const token = await requestToken(
      {
        url: oauth.tokenUrl,
        clientId: oauth.clientId,
        clientSecret: oauth.clientSecret,
        encoding: oauth.tokenRequestEncoding,
      },
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: auth.redirectUri,
        code_verifier: entry.codeVerifier,
      },
      { timeoutMs: oauth.tokenTimeoutMs, fetch: ctx.deps.fetch },
    );
    ctx.deps.platformClock?.observe(token.serverDate?.getTime(), sentAt, Date.now());
    return token;
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    const storeId = entry.storeId ?? queryStore;
    if (err.code === INVALID_GRANT && !entry.retried) {
      // A stale or reused code: one fresh attempt, marked so it cannot loop.
      log.info('install: code refused (invalid_grant), restarting the install once');
      return { kind: 'restart', entry };
    }
    if (err.code === INVALID_GRANT) {
      log.warn('install: code refused again after a restart');
      return { kind: 'code_rejected', storeId };
    }
    if (err.code === INVALID_CLIENT) {
      // Our own credentials were refused: no retry can help, the operator has to
      // fix the configuration. The log names the settings; the page names none.
      log.error(
        { oauthError: err.code, settings: [OAUTH_ENV.clientSecret, OAUTH_ENV.clientId] },
        `install: the platform refused the app's client credentials (invalid_client); ${OAUTH_ENV.clientSecret} (or oauth.clientSecret) is wrong or belongs to another app: copy the client secret and id from the developer dashboard into ${OAUTH_ENV.clientSecret} and ${OAUTH_ENV.clientId}, then restart`,
      );
      return { kind: 'client_rejected' };
    }
    log.error({ err, oauthError: err.code }, 'install: token exchange failed');
    return { kind: 'exchange_failed', storeId };
  }
}

/** The hooks around storing the installation and binding the browser session to it. */
async function store(
  ctx: InstallContext,
  req: CoreRequest,
  grant: Grant,
  token: TokenResponse,
  entry: PendingInstall,
): Promise<CallbackOutcome> {
  const { config, deps } = ctx;
  const { storeId, scopes, missingScopes } = grant;
  const sl = storeLogger(req.log, storeId);
  annotateActive(() => ({ [ATTR.storeId]: storeId }));
  if (missingScopes.length > 0) narrowerGrantWarning(ctx, req.log, storeId, missingScopes);
  try {
    await config.auth.beforeInstall?.({ storeId, scopes, missingScopes });
  } catch (err) {
    sl.error({ err }, 'install: beforeInstall hook failed; nothing stored');
    return { kind: 'before_hook_failed', storeId };
  }
  const installation = await storageStep(
    async () => {
      // No read first: a row whose tokens no longer decrypt (a lost key) must
      // still be replaced, since reinstalling is how the merchant recovers.
      // The platform's Date stamps the install in the platform's clock: the
      // app.uninstalled event's time is compared with it (docs/platform-contract.md).
      const row = await deps.storage.installations.upsert(
        storeId,
        {
          scopes,
          accessToken: token.accessToken,
          refreshToken: token.refreshToken,
          // The platform's clock: from its Date (when it issued them), else our estimate of it.
          accessTokenExpiresAt: new Date(
            (token.serverDate?.getTime() ?? deps.platformClock?.now() ?? Date.now()) +
              token.expiresIn * 1000,
          ),
        },
        { platformInstalledAt: config.oauth.installTimeFromServerDate ? token.serverDate : null },
      );
      deps.onInstalled?.(storeId);
      await req.session.start(storeId);
      return row;
    },
    storeId,
    'update',
  );
  if ('kind' in installation) return installation;
  // The upsert starts a new row at version 1 and bumps an existing one.
  const reinstall = installation.version > 1;
  sl.info({ scopes, reinstall }, reinstall ? 'store reinstalled' : 'store installed');
  try {
    await config.auth.afterInstall?.({ storeId, scopes, missingScopes, installation, reinstall });
  } catch (err) {
    sl.error({ err }, 'install: afterInstall hook failed; the installation is kept');
    return { kind: 'after_hook_failed', storeId };
  }
  return { kind: 'installed', location: homeUrl(ctx, storeId, entry.returnTo) };
}

/** Where the merchant lands after installing. */
function homeUrl(ctx: InstallContext, storeId: string, returnTo: string | null): string {
  const { config } = ctx;
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

/** An outcome as the response the shell writes: its table row, its page, its cookie. */
export async function answer(
  ctx: InstallContext,
  log: Logger,
  outcome: CallbackOutcome,
  remaining: readonly PendingInstall[],
): Promise<CoreResponse> {
  const row = outcomeRow(outcome);
  if (outcome.kind === 'restart') {
    const { storeId, returnTo } = outcome.entry;
    return ctx.authorizeRedirect(remaining, storeId, returnTo, true);
  }
  let r: CoreResponse;
  if (outcome.kind === 'installed') r = redirectTo(outcome.location);
  else if (outcome.kind === 'storage_down') {
    r = ctx.storageDown(log, outcome.err, ctx.beginUrlFor(outcome.storeId));
  } else {
    const headers: Record<string, string> =
      outcome.kind === 'rate_limited' ? { 'retry-after': String(outcome.retryAfterSeconds) } : {};
    r = ctx.page(callbackPage(ctx, outcome, row.status, row.code ?? ''), headers);
  }
  if (row.binding === 'update') r.cookies.push(await ctx.bindingCookie(remaining));
  return r;
}

type PageOutcome = Exclude<CallbackOutcome, { kind: 'restart' | 'installed' | 'storage_down' }>;

/** Title, message and retry link of each page outcome (status and code: the table). */
const PAGES: {
  [K in PageOutcome['kind']]: {
    title: string;
    message: string | ((o: Extract<PageOutcome, { kind: K }>) => string);
    retryLabel?: string;
  };
} = {
  malformed: {
    title: 'Invalid request',
    message: 'The install callback is malformed. Start the install again.',
  },
  platform_error: {
    title: 'Installation failed',
    message: (o) => `The store platform reported an error (${o.error}). Please try again.`,
  },
  missing_params: {
    title: 'Invalid request',
    message: 'The install callback is missing its parameters. Start the install again.',
  },
  store_id_invalid: {
    title: 'Invalid store',
    message: 'The store id in the callback is not valid. Start the install again.',
  },
  binding_missing: {
    title: 'Installation expired',
    message:
      'This install was not started in this browser, or it took too long. Start the install again.',
  },
  state_invalid: {
    title: 'Installation expired',
    message:
      'This install link is no longer valid (expired, already used, or started in another browser). Start the install again.',
  },
  rate_limited: {
    title: 'Too many attempts',
    message: (o) =>
      `The app is handling too many installs right now. Please try again in ${o.retryAfterSeconds} seconds.`,
  },
  store_mismatch: {
    title: 'Store mismatch',
    message:
      'The store that approved the install is not the one the install began for. Start again.',
  },
  code_replayed: {
    title: 'Installation link already used',
    message: 'This install link was already used. Start the install again from the store admin.',
  },
  code_rejected: {
    title: 'Installation failed',
    message: 'The store platform refused the authorization twice. Please start the install again.',
  },
  client_rejected: {
    title: 'App not set up correctly',
    message:
      "The store platform did not accept this app's credentials, so the install cannot finish. Nothing was saved. The app's developer has to correct its configuration; trying again will not help until then.",
  },
  exchange_failed: {
    title: 'Store platform unavailable',
    message:
      'The app could not complete the install with the store platform. Nothing was saved; please try again.',
  },
  inconsistent_store: {
    title: 'Installation failed',
    message: 'The store platform answered inconsistently. Nothing was saved; please try again.',
  },
  scopes_refused: {
    title: 'Permissions missing',
    message:
      'The app needs every permission it asked for, and some were not granted. Nothing was saved; install again and approve all permissions.',
    retryLabel: 'Install the app',
  },
  before_hook_failed: {
    title: 'Installation failed',
    message:
      'The app could not finish setting up for your store. Nothing was saved; please try again.',
  },
  after_hook_failed: {
    title: 'Setup incomplete',
    message:
      'The app was installed but could not finish setting up for your store. Please try again.',
  },
};

const ACCESS_DENIED_PAGE = {
  title: 'Installation cancelled',
  message:
    'The app was not installed because the permission request was declined. You can start again whenever you like.',
  retryLabel: 'Install the app',
};

/** The page of a page outcome. The retry link begins again for the outcome's store. */
function callbackPage(
  ctx: InstallContext,
  o: PageOutcome,
  status: number,
  code: string,
): PageInput {
  const denied = o.kind === 'platform_error' && o.error === 'access_denied';
  const spec = denied ? ACCESS_DENIED_PAGE : PAGES[o.kind];
  const message =
    typeof spec.message === 'string'
      ? spec.message
      : (spec.message as (x: PageOutcome) => string)(o);
  const retryUrl =
    o.kind === 'client_rejected' ? null : ctx.beginUrlFor('storeId' in o ? o.storeId : null);
  return {
    status,
    code,
    title: spec.title,
    message,
    retryUrl,
    ...(spec.retryLabel ? { retryLabel: spec.retryLabel } : {}),
  };
}
