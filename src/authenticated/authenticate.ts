/**
 * `authenticated()` without a framework: the store of a request (app session
 * token, the admin's launch token, or the session cookie), its installation
 * and the required scopes, then the store context, or the answer to send
 * instead (re-authorise, 401, 403 cross-site, 503, 500). Both shells call it:
 * Express's `kit.authenticated()` (past its in-memory fast path, `fromMemory`
 * below, which applies the same rules) and the Fetch shell's
 * `kit.authenticate(request)`.
 */
import type { StoreApiClient } from '../client/index.js';
import { bearerToken, isBearerScheme, sentBearer } from '../core/bearer.js';
import { withChallenge } from '../core/challenge.js';
import type { CoreRequest, CoreResponse } from '../core/http.js';
import { budgetedWarnings } from '../core/log-budget.js';
import { isStoreId } from '../core/store-id.js';
import { StorageError, StoreAppError } from '../errors/index.js';
import type { TokenManager } from '../refresh/manager.js';
import type { CacheTicket } from '../refresh/refresh-types.js';
import type { Installation } from '../storage/types.js';
import {
  type AnswerContext,
  answerError,
  crossSiteRefused,
  invalidBearer,
  reauthorize,
} from './answers.js';
import { SCOPES_CHANGED, SESSION_REQUIRED, SESSION_TOKEN_INVALID } from './errors.js';
import { isCrossSiteWrite, isFramedOrUnknown, isPageNavigation, singleQuery } from './request.js';
import {
  type LaunchVerifier,
  SessionTokenError,
  type SessionTokenIssuer,
} from './session-token.js';

/** What `authenticated()` puts on `res.locals.store` (and `kit.authenticate` returns). */
export interface AuthenticatedStore {
  storeId: string;
  /** Scopes the merchant granted. */
  scopes: readonly string[];
  /**
   * Configured scopes the merchant did not grant. Empty unless
   * `auth.narrowerScopes` is 'record' (with 'refuse' such a store is sent
   * through the install instead).
   */
  missingScopes: readonly string[];
  /** The API client for this store (refreshes itself, paced, typed errors). */
  client: StoreApiClient;
  /** Mint an app session token for the embedded frontend (`Authorization: Bearer`). */
  sessionToken(): Promise<{ token: string; expiresAt: Date }>;
}

export interface AuthenticateDeps {
  sessionTokens: Pick<SessionTokenIssuer, 'verifySession' | 'mint'>;
  tokens: Pick<TokenManager, 'getInstallation' | 'reload'>;
  client(storeId: string): StoreApiClient;
  /** Scopes the app is configured to need. */
  scopes: readonly string[];
  /** 'record': serve a narrower grant (the route sees `missingScopes`). @default 'refuse' */
  narrowerScopes?: 'refuse' | 'record';
  /** Absent when the app is not embedded. */
  launch?: { param: string; verifier: Pick<LaunchVerifier, 'verify'> };
  /** Explains a 401 without a session when the admin's launch never reached `authenticated()`. */
  launchWatch?: {
    explainCall(referer: string | undefined, host: string | undefined): string | undefined;
  };
  /** Absolute URL of the install begin route (`{appUrl}/auth`). */
  beginUrl: string;
  /** The header naming where to re-authorise (`authenticated.reauthorizeHeader`). */
  reauthorizeHeader: string;
  /** Absolute lifetime of a cookie session, in seconds. @default 86400 */
  maxSessionAgeSeconds?: number;
  /** The `frame-ancestors` directive of the kit's pages, unless a call names its own. */
  frameAncestors?: string;
  logger?: { warn(obj: Record<string, unknown>, msg: string): void };
}

/**
 * The store context, or the response to send instead. `launched`: this request's
 * launch token started a new browser session (its cookie is on the session).
 */
export type AuthDecision =
  | { ok: true; store: AuthenticatedStore; launched: boolean }
  | { ok: false; response: CoreResponse };

/** Who the request says it acts for, before the installation is checked. */
interface Found {
  storeId: string | undefined;
  /** When the session began, epoch seconds (carried into renewed session tokens). */
  authTime?: number;
  /** The installation a bearer token was minted for (`installedAt`, epoch ms). */
  installedAt?: number;
  /** Only the session cookie named the store (no bearer or launch token). */
  byCookie: boolean;
  launched: boolean;
}

type Step = Found | { response: CoreResponse };

/** `missingScopes` of a store that granted every scope: one frozen array for all requests. */
const NONE_MISSING: readonly string[] = Object.freeze([]);

/** The configured scopes a grant lacks (the same frozen empty array when none). */
export function missingScopes(required: readonly string[], granted: readonly string[]) {
  for (const s of required) {
    if (!granted.includes(s)) return required.filter((r) => !granted.includes(r));
  }
  return NONE_MISSING;
}

/**
 * Whether `installation` is the one a bearer token was minted for (`installedAt`,
 * epoch ms; undefined: the request named no installation, a cookie or a launch).
 */
export function isMintedFor(installedAt: number | undefined, installation: Installation): boolean {
  return installedAt === undefined || installation.installedAt.getTime() === installedAt;
}

/** The store context of an authenticated request. */
function storeContext(
  deps: Pick<AuthenticateDeps, 'client' | 'sessionTokens'>,
  storeId: string,
  installation: Installation,
  missing: readonly string[],
  authTime: number | undefined,
): AuthenticatedStore {
  const installedAt = installation.installedAt.getTime();
  return {
    storeId,
    scopes: installation.scopes,
    missingScopes: missing,
    // A plain property: an object literal with a getter costs ~0.6 µs to build in V8.
    client: deps.client(storeId),
    // A renewal keeps the session's start: it cannot outlive the session.
    sessionToken: () => deps.sessionTokens.mint(storeId, { installedAt, authTime }),
  };
}

/** What the in-memory path reads: remembered tokens and cached installations. */
export interface MemoryDeps extends Pick<AuthenticateDeps, 'client' | 'sessionTokens' | 'scopes'> {
  sessionTokens: AuthenticateDeps['sessionTokens'] &
    Partial<Pick<SessionTokenIssuer, 'rememberedSession'>>;
  tokens: Partial<Pick<TokenManager, 'cachedInstallation' | 'cachedTicket' | 'stillCached'>>;
}

/**
 * What the in-memory path keeps beside a remembered token (its `memo` slot): the store
 * context's parts as built from one installation's `installedAt` and scopes, reused
 * while the cached installation still carries those very objects (a reinstall or a
 * new grant brings new ones; installations are never changed in place), so the rules
 * give the same answer. The client holds no state of its own (client/factory.ts), so
 * one kept past its eviction from the client cache behaves as the cache's next one
 * would. `owner`: the memory path that built it (two kits, or a kit and
 * `createAuthenticated`, may share one token issuer, not one client factory). Nothing
 * here holds the installation itself: its decrypted tokens must not outlive the
 * cache's copy (a purge) for as long as the token is remembered.
 */
interface StoreMemo {
  owner: object;
  storeId: string;
  installedAt: Installation['installedAt'];
  scopes: Installation['scopes'];
  client: StoreApiClient;
  sessionToken: AuthenticatedStore['sessionToken'];
  /**
   * The cache entry's ticket for that installation: while it stands, the cache would
   * answer with the same installation, and the memo is used without looking the store
   * up (with 1,000 stores, the look-up's cold reads cost more than the rest of the
   * path). Undefined when the manager gives none (a pending write, a test's cache).
   */
  ticket: CacheTicket | undefined;
}

/** The request's own store object, from a memo the rules accepted. */
function storeOf(memo: StoreMemo): AuthenticatedStore {
  return {
    storeId: memo.storeId,
    scopes: memo.scopes,
    missingScopes: NONE_MISSING,
    client: memo.client,
    sessionToken: memo.sessionToken,
  };
}

/**
 * `authenticate` without a promise, for a bearer token this process verified before
 * (still before its expiry and its session's end) whose store's installation is in
 * memory: the store, or undefined when anything needs the full path (first sight of
 * a token, expiry, refresh, reload, a missing scope, another installation). The rules
 * are the full path's own (`isMintedFor`, `missingScopes`; a token only as
 * `Bearer <token>`, which `bearerToken` accepts); only the
 * answers that need I/O are left to it. Each request still gets a store object of its
 * own (an app may add to it); what it is made of is built once per token and
 * installation (`StoreMemo`): one look-up a request, the token's, while the cache's
 * ticket for the installation stands; the installation's look-up otherwise.
 */
export function createMemoryAuthenticate(deps: MemoryDeps) {
  const remembered = deps.sessionTokens.rememberedSession;
  const cached = deps.tokens.cachedInstallation;
  const ticketOf = deps.tokens.cachedTicket;
  const stillCached = deps.tokens.stillCached;
  const required = deps.scopes;
  const owner = {};
  return function fromMemory(authorization: string | undefined): AuthenticatedStore | undefined {
    if (authorization === undefined || remembered === undefined || cached === undefined) {
      return undefined;
    }
    // A hit needs a token equal to one verified before, which has no whitespace, so
    // `bearerToken`'s scan of the token for whitespace would add nothing here. Any other
    // spelling takes the full path.
    const token = sentBearer(authorization);
    if (token === undefined) return undefined;
    const entry = remembered(token);
    if (entry === undefined) return undefined;
    let memo = entry.memo as StoreMemo | undefined;
    if (
      memo !== undefined &&
      memo.owner === owner &&
      memo.ticket !== undefined &&
      stillCached?.(memo.ticket) === true
    ) {
      return storeOf(memo);
    }
    const { session } = entry;
    const installation = cached(session.storeId);
    if (installation === undefined) return undefined;
    if (
      memo === undefined ||
      memo.installedAt !== installation.installedAt ||
      memo.scopes !== installation.scopes ||
      memo.owner !== owner
    ) {
      if (!isMintedFor(session.installedAt, installation)) return undefined;
      if (missingScopes(required, installation.scopes) !== NONE_MISSING) return undefined;
      const store = storeContext(
        deps,
        session.storeId,
        installation,
        NONE_MISSING,
        session.authTime,
      );
      memo = {
        owner,
        storeId: session.storeId,
        installedAt: installation.installedAt,
        scopes: installation.scopes,
        client: store.client,
        sessionToken: store.sessionToken,
        ticket: ticketOf?.(session.storeId),
      };
      entry.memo = memo;
      return store;
    }
    // The same installation, cached anew (its entry replaced by one holding it): the
    // new entry's ticket, so the next request takes the short way again.
    if (memo.ticket === undefined || !memo.ticket.live) memo.ticket = ticketOf?.(session.storeId);
    return storeOf(memo);
  };
}

/** Builds `authenticate(req)` over the kit's tokens, installations and session store. */
export function createAuthenticate(options: AuthenticateDeps) {
  // Every warning here is one a client can cause at will: budgeted, so a flood of junk
  // launches or cross-site writes is not a flood of log lines.
  const deps: AuthenticateDeps = options.logger
    ? { ...options, logger: budgetedWarnings(options.logger) }
    : options;
  const maxSessionAgeMs = (deps.maxSessionAgeSeconds ?? 86_400) * 1000;
  const appOrigin = new URL(deps.beginUrl).origin;
  const contextFor = (ancestors: string | undefined): AnswerContext => ({
    beginUrl: deps.beginUrl,
    reauthorizeHeader: deps.reauthorizeHeader,
    ancestors,
  });

  /**
   * `frameAncestors`: the directive for the pages this call may answer (Express
   * passes what its security headers set); defaults to `deps.frameAncestors`.
   */
  return async function authenticate(
    req: CoreRequest,
    frameAncestors: string | undefined = deps.frameAncestors,
  ): Promise<AuthDecision> {
    const ctx = contextFor(frameAncestors);
    let storeId: string | undefined;
    try {
      const step = await findStore(deps, req, ctx, maxSessionAgeMs);
      if ('response' in step) return refused(req, step.response);
      if (step.byCookie && step.storeId !== undefined && isCrossSiteWrite(req, appOrigin)) {
        deps.logger?.warn(
          { method: req.method, site: req.header('sec-fetch-site') ?? null },
          'Cross-site write with the session cookie refused.',
        );
        return refused(req, crossSiteRefused());
      }
      storeId = step.storeId;
      if (storeId === undefined) return refused(req, noSession(deps, req, ctx));
      const decision = await storeFor(deps, req, ctx, { ...step, storeId });
      return decision.ok ? decision : refused(req, decision.response);
    } catch (err) {
      return refused(req, answerError(req, ctx, storeId, err));
    }
  };
}

/** A refusal, its 401 carrying the challenge. */
function refused(req: CoreRequest, response: CoreResponse): AuthDecision {
  return { ok: false, response: withChallenge(response, req) };
}

/** No bearer token, launch or live session named a store. */
function noSession(deps: AuthenticateDeps, req: CoreRequest, ctx: AnswerContext): CoreResponse {
  const q = singleQuery(req, 'store_id');
  const explained = deps.launchWatch?.explainCall(req.header('referer'), req.header('host'));
  return reauthorize(
    req,
    ctx,
    isStoreId(q) ? q : undefined,
    SESSION_REQUIRED,
    explained ?? 'No app session: open the app from the store admin, or send an app session token.',
  );
}

/** The store named by the request: its bearer token, else its launch token, else its cookie. */
async function findStore(
  deps: AuthenticateDeps,
  req: CoreRequest,
  ctx: AnswerContext,
  maxSessionAgeMs: number,
): Promise<Step> {
  const auth = req.header('authorization');
  if (isBearerScheme(auth)) return fromBearer(deps, auth ?? '');
  const launched = await fromLaunch(deps, req);
  if (launched !== undefined) return launched;
  return fromCookie(req, ctx, maxSessionAgeMs);
}

async function fromBearer(deps: AuthenticateDeps, auth: string): Promise<Step> {
  const token = bearerToken(auth);
  if (!token) {
    return {
      response: invalidBearer(
        SESSION_TOKEN_INVALID,
        'The Authorization header must be "Bearer <app session token>".',
      ),
    };
  }
  try {
    const s = await deps.sessionTokens.verifySession(token);
    return { ...s, byCookie: false, launched: false };
  } catch (err) {
    if (err instanceof StoreAppError) return { response: invalidBearer(err.code, err.message) };
    throw err;
  }
}

/**
 * A launch token from the admin's iframe starts a fresh session for its store.
 * Outside a frame (a link someone handed out, carrying their own store's token)
 * it signs nobody in, so it cannot switch this browser to another store (login
 * CSRF). A stale or replayed one falls back to the session cookie.
 */
async function fromLaunch(deps: AuthenticateDeps, req: CoreRequest): Promise<Found | undefined> {
  const token = deps.launch ? singleQuery(req, deps.launch.param) : undefined;
  if (!deps.launch || token === undefined) return undefined;
  if (!isFramedOrUnknown(req)) {
    const dest = req.header('sec-fetch-dest');
    deps.logger?.warn({ dest }, 'Launch token outside a frame ignored (not from the admin).');
    return undefined;
  }
  let storeId: string;
  try {
    storeId = await deps.launch.verifier.verify(token);
  } catch (err) {
    if (!(err instanceof SessionTokenError)) throw err;
    // `errorCode`: a `code` field is redacted (it may be an authorization code); this one is
    // the refusal's stable code (expired, replayed, another app's), not a secret.
    deps.logger?.warn({ errorCode: err.code }, 'Launch token refused.');
    return undefined;
  }
  try {
    await req.session.start(storeId);
  } catch (cause) {
    // The session store failed: answer 503 rather than carry on with the old session.
    if (cause instanceof StoreAppError) throw cause;
    throw new StorageError('Could not start the app session (session store failed).', { cause });
  }
  return { storeId, authTime: Math.floor(Date.now() / 1000), byCookie: false, launched: true };
}

/**
 * The cookie session's store while it is younger than its absolute lifetime
 * (the session store's own expiry is extended by every request).
 */
async function fromCookie(
  req: CoreRequest,
  ctx: AnswerContext,
  maxSessionAgeMs: number,
): Promise<Step> {
  const data = await req.session.read();
  let authAt = data?.authAt;
  if (data?.storeId !== undefined && authAt === undefined) {
    // A session bound before sessions carried their start (an upgrade, or an app that
    // set storeId itself): its lifetime counts from now.
    authAt = Date.now();
    await req.session.touchAuthAt(authAt);
  }
  const current =
    typeof authAt === 'number' && Date.now() - authAt < maxSessionAgeMs ? data?.storeId : undefined;
  const queryStore = singleQuery(req, 'store_id');
  if (
    isPageNavigation(req) &&
    isStoreId(queryStore) &&
    current !== undefined &&
    queryStore !== current
  ) {
    // The merchant opened the app for another store than the session's: install/log in there.
    return {
      response: reauthorize(req, ctx, queryStore, SESSION_REQUIRED, 'Sign in to this store first.'),
    };
  }
  return {
    storeId: current,
    authTime: typeof authAt === 'number' ? Math.floor(authAt / 1000) : undefined,
    byCookie: true,
    launched: false,
  };
}

/** The installation behind `found` (the one a bearer token was minted for) and its scopes. */
async function storeFor(
  deps: AuthenticateDeps,
  req: CoreRequest,
  ctx: AnswerContext,
  found: Found & { storeId: string },
): Promise<AuthDecision> {
  const { storeId } = found;
  const refuse = (code: string, message: string): AuthDecision => ({
    ok: false,
    response: reauthorize(req, ctx, storeId, code, message),
  });
  let installation = await deps.tokens.getInstallation(storeId);
  if (!isMintedFor(found.installedAt, installation)) {
    // The memory copy may predate a reinstall in another process; ask the database.
    installation = await deps.tokens.reload(storeId);
    if (!isMintedFor(found.installedAt, installation)) {
      // Minted for an installation that has since ended (uninstall, then reinstall):
      // the uninstall ended that session, as it ends cookie sessions.
      return refuse(
        SESSION_TOKEN_INVALID,
        'The app session token belongs to an earlier installation of this store; open the app from the store admin again.',
      );
    }
  }
  let missing = missingScopes(deps.scopes, installation.scopes);
  if (missing.length > 0) {
    // The memory copy may predate a reinstall in another process; ask the database.
    installation = await deps.tokens.reload(storeId);
    missing = missingScopes(deps.scopes, installation.scopes);
  }
  if (missing.length > 0 && deps.narrowerScopes !== 'record') {
    return refuse(
      SCOPES_CHANGED,
      `The app now needs scopes the merchant has not granted (${missing.join(', ')}); authorise again.`,
    );
  }
  const store = storeContext(deps, storeId, installation, missing, found.authTime);
  return { ok: true, store, launched: found.launched };
}
