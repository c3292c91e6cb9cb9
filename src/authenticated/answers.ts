/**
 * The answers `authenticate()` gives instead of a store: re-authorise (redirect,
 * the styled page inside the admin's iframe, or 401 JSON naming where), refused
 * bearer tokens, cross-site writes, and the store the app cannot reach (503) or
 * credentials the platform refused (500). Pages carry the app's frame-ancestors.
 */
import { NotInstalledError, ReauthorizationRequiredError } from '../client/errors.js';
import { CHALLENGE_INVALID } from '../core/challenge.js';
import { type CoreRequest, type CoreResponse, respond } from '../core/http.js';
import { StorageError, StoreAppError } from '../errors/index.js';
import { renderPage, renderReauthorize } from '../install/pages.js';
import { RefreshClientRejectedError } from '../refresh/errors.js';
import { recordError } from '../telemetry/index.js';
import { CROSS_SITE_REQUEST } from './errors.js';
import { isEmbeddedLoad, isPageNavigation } from './request.js';

export interface AnswerContext {
  /** Absolute URL of the install begin route. */
  beginUrl: string;
  /** The header naming where to re-authorise (`authenticated.reauthorizeHeader`). */
  reauthorizeHeader: string;
  /** The `frame-ancestors` directive of the kit's pages (undefined: none). */
  ancestors: string | undefined;
}

const NO_STORE = 'no-store';

/** The install begin URL, for `storeId` when known. */
export function authUrlFor(beginUrl: string, storeId: string | undefined): string {
  const url = new URL(beginUrl);
  if (storeId) url.searchParams.set('store_id', storeId);
  return url.toString();
}

/** The app cannot act for the store: send the merchant (or tell the caller to send them) through the install. */
export function reauthorize(
  req: CoreRequest,
  ctx: AnswerContext,
  storeId: string | undefined,
  code: string,
  message: string,
): CoreResponse {
  const url = authUrlFor(ctx.beginUrl, storeId);
  if (!isPageNavigation(req)) {
    const headers = { 'cache-control': NO_STORE, [ctx.reauthorizeHeader.toLowerCase()]: url };
    return respond.json(401, { code, message }, headers);
  }
  if (!isEmbeddedLoad(req)) return respond.redirect(url, 302);
  // Inside the admin's iframe the OAuth pages cannot load (they refuse framing): a styled
  // page saying why, whose one button (or script) leaves the frame.
  return renderReauthorize({ url, code }, ctx.ancestors);
}

/** A malformed, forged or expired bearer token. */
export function invalidBearer(code: string, message: string): CoreResponse {
  return respond.json(
    401,
    { code, message },
    { 'cache-control': NO_STORE, 'www-authenticate': CHALLENGE_INVALID },
  );
}

/** The browser attached the session cookie to a write another site made. */
export function crossSiteRefused(): CoreResponse {
  return respond.json(
    403,
    {
      code: CROSS_SITE_REQUEST,
      message:
        'This request came from another site; the app refuses cookie-authenticated writes from other sites. Send the app session token (Authorization: Bearer) or call from the app itself.',
    },
    { 'cache-control': NO_STORE },
  );
}

function unavailable(req: CoreRequest, ctx: AnswerContext, err: StoreAppError): CoreResponse {
  // A merchant opening the page gets the kit's styled page, a fetch gets JSON.
  if (isPageNavigation(req)) {
    const page = renderPage(
      {
        status: 503,
        code: err.code,
        title: 'Temporarily unavailable',
        message:
          'The app cannot reach its database or the store platform right now. Please reload the page in a moment.',
      },
      ctx.ancestors,
    );
    page.headers['retry-after'] = '5';
    return page;
  }
  return respond.json(
    503,
    {
      code: err.code,
      message: 'The app cannot reach its storage or the platform right now; try again shortly.',
    },
    { 'cache-control': NO_STORE, 'retry-after': '5' },
  );
}

/**
 * The app's own credentials were refused on a refresh: a configuration error
 * the token manager logged with the settings to fix. The merchant is told no
 * setting and no secret, and not to retry (500, not 503).
 */
function misconfigured(
  req: CoreRequest,
  ctx: AnswerContext,
  err: RefreshClientRejectedError,
): CoreResponse {
  const message =
    "The store platform did not accept this app's credentials. Nothing was lost; the app's developer has to correct its configuration.";
  if (isPageNavigation(req)) {
    const page = { status: 500, code: err.code, title: 'App not set up correctly', message };
    return renderPage(page, ctx.ancestors);
  }
  return respond.json(500, { code: err.code, message }, { 'cache-control': NO_STORE });
}

/** The answer to an error met while authenticating; rethrows what is not the kit's to answer. */
export function answerError(
  req: CoreRequest,
  ctx: AnswerContext,
  storeId: string | undefined,
  err: unknown,
): CoreResponse {
  if (err instanceof NotInstalledError || err instanceof ReauthorizationRequiredError) {
    return reauthorize(req, ctx, storeId, err.code, err.message);
  }
  if (err instanceof RefreshClientRejectedError) return misconfigured(req, ctx, err);
  if (err instanceof StoreAppError && (err.status === 503 || err instanceof StorageError)) {
    // Counted as the kit's error handler counts its own: a dashboard sees the outage.
    recordError('request', err.code);
    return unavailable(req, ctx, err);
  }
  throw err;
}
