/**
 * The authorization server: authorize + consent, decision, token endpoint,
 * session check and RFC 8414 metadata. Paths per docs/platform-contract.md.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { AppRegistry, RegisteredApp } from '../apps.js';
import { s256, secretsEqual } from '../crypto.js';
import { html, sendPage } from '../html.js';
import { isScope, parseScopeList, SCOPE_NAMES, SCOPES } from '../scopes.js';
import { sameOriginForms } from '../security.js';
import type { StoreDirectory } from '../stores.js';
import {
  type AuthorizeRequest,
  type PendingRequests,
  queryMap,
  validateAuthorizeRequest,
  withQuery,
} from './authorize.js';
import { bearerToken, sendBearerError, sendOAuthError } from './responses.js';
import type { IssuedTokens, TokenService } from './tokens.js';

export interface TokenStats {
  tokenRequests: { authorization_code: number; refresh_token: number };
}

export interface AuthRouterDeps {
  apps: AppRegistry;
  tokens: TokenService;
  stores: StoreDirectory;
  pending: PendingRequests;
  stats: TokenStats;
  origin: () => string;
  /** Called when the merchant approves: issues the code and returns the callback URL. */
  approve: (request: AuthorizeRequest, storeId: string) => string;
}

export const AUTHORIZE_PATH = '/oauth/authorize';
export const DECISION_PATH = '/oauth/authorize/decision';
export const TOKEN_PATH = '/oauth/token';
export const SESSION_PATH = '/oauth/session';
export const METADATA_PATH = '/.well-known/oauth-authorization-server';

const VERIFIER_RE = /^[A-Za-z0-9._~-]{43,128}$/;

export function authorizationServerMetadata(origin: string): Record<string, unknown> {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}${AUTHORIZE_PATH}`,
    token_endpoint: `${origin}${TOKEN_PATH}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    scopes_supported: SCOPE_NAMES,
    service_documentation: `${origin}/dashboard`,
    // Non-standard: where the session check lives (contract).
    session_endpoint: `${origin}${SESSION_PATH}`,
  };
}

function errorPage(
  res: Response,
  status: number,
  title: string,
  message: string,
  uris?: { registered: string; sent: string },
): void {
  const detail = uris
    ? html`<dl><dt>Registered for this app</dt><dd><code>${uris.registered}</code></dd><dt>Sent by the app</dt><dd><code>${uris.sent}</code></dd></dl>`
    : '';
  sendPage(res, {
    status,
    title,
    body: html`<div class="card error"><h1>${title}</h1><p>${message}</p>${detail}<p class="muted">The app's request could not be completed. Nothing was shared with the app.</p></div>`,
  });
}

function consentPage(
  res: Response,
  deps: AuthRouterDeps,
  request: AuthorizeRequest,
  requestId: string,
): void {
  const stores = request.storeId
    ? [deps.stores.get(request.storeId)].filter((s) => s !== null)
    : deps.stores.list();
  const storeField =
    stores.length === 0
      ? html`<p class="muted">There is no store yet. <a href="/admin">Create one in the admin</a>, then start the installation again.</p>`
      : request.storeId && stores[0]
        ? html`<p>Store: <strong>${stores[0].name}</strong> <span class="muted">${stores[0].domain}</span></p><input type="hidden" name="store_id" value="${stores[0].id}">`
        : html`<label for="store_id">Install in store</label><select id="store_id" name="store_id">${stores.map((s) => html`<option value="${s.id}">${s.name} (${s.domain})</option>`)}</select>`;
  sendPage(res, {
    title: `Install ${request.app.name}`,
    body: html`<div class="card"><h1>Install ${request.app.name}?</h1>
<p><strong>${request.app.name}</strong> is asking for permission to access your store's data.</p>
<form method="post" action="${DECISION_PATH}">
<input type="hidden" name="request_id" value="${requestId}">
${storeField}
<h2>This app will be able to:</h2>
<ul class="scope-list">${request.scopes.map((s) => html`<li><code>${s}</code> — ${isScope(s) ? SCOPES[s] : ''}</li>`)}</ul>
<p class="muted">After you approve you will be sent to <code>${new URL(request.redirectUri).origin}</code>.</p>
<div class="actions"><button type="submit" name="decision" value="approve"${stores.length === 0 ? html` disabled` : ''}>Approve and install</button><button type="submit" name="decision" value="deny" class="secondary">Deny</button></div>
</form></div>`,
  });
}

function str(body: Record<string, unknown>, key: string): string | undefined | null {
  const v = body[key];
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : null;
}

function tokenResponse(res: Response, t: IssuedTokens): void {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  res.status(200).json({
    access_token: t.accessToken,
    refresh_token: t.refreshToken,
    token_type: 'Bearer',
    expires_in: t.expiresIn,
    scope: t.scopes.join(','),
    store_id: t.storeId,
  });
}

/** HTTP Basic credentials, with RFC 6749 §2.3.1's form-urlencoding of id and secret. */
function basicCredentials(
  header: string | undefined,
): { id: string; secret: string } | null | undefined {
  if (!header || !/^Basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return null;
  try {
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { id: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
  } catch {
    return null;
  }
}

export function createAuthRouter(deps: AuthRouterDeps): Router {
  const router = express.Router();
  const formParser = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 50 });
  const jsonParser = express.json({ limit: '64kb' });

  router.get(METADATA_PATH, function metadata(_req, res) {
    res.set('Cache-Control', 'no-store').json(authorizationServerMetadata(deps.origin()));
  });

  router.get(AUTHORIZE_PATH, function authorize(req, res) {
    const url = new URL(req.originalUrl, 'http://platform.invalid');
    const result = validateAuthorizeRequest(queryMap(url.searchParams), {
      apps: deps.apps,
      storeExists: deps.stores.exists,
    });
    if (!result.ok) {
      if (result.kind === 'page') {
        errorPage(
          res,
          400,
          'This installation link is not valid',
          result.description,
          result.redirectUris,
        );
        return;
      }
      res.redirect(302, result.redirectUrl);
      return;
    }
    consentPage(res, deps, result.request, deps.pending.add(result.request));
  });

  router.post(DECISION_PATH, sameOriginForms(deps.origin), formParser, function decision(req, res) {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const requestId = str(body, 'request_id');
    const request = typeof requestId === 'string' ? deps.pending.take(requestId) : undefined;
    if (!request) {
      errorPage(res, 400, 'This request has expired', 'Start the installation again from the app.');
      return;
    }
    const decisionValue = str(body, 'decision');
    if (decisionValue === 'deny') {
      res.redirect(
        302,
        withQuery(request.redirectUri, {
          error: 'access_denied',
          error_description: 'The merchant denied the request.',
          state: request.state,
        }),
      );
      return;
    }
    const storeId = str(body, 'store_id');
    if (
      decisionValue !== 'approve' ||
      typeof storeId !== 'string' ||
      !deps.stores.exists(storeId) ||
      (request.storeId !== undefined && request.storeId !== storeId)
    ) {
      errorPage(res, 400, 'Invalid decision', 'Choose a store and Approve or Deny.');
      return;
    }
    res.redirect(302, deps.approve(request, storeId));
  });

  router.post(
    TOKEN_PATH,
    function parseTokenBody(req: Request, res: Response, next: NextFunction) {
      const type = req.is(['application/json', 'application/x-www-form-urlencoded']);
      if (type === 'application/json') jsonParser(req, res, next);
      else if (type === 'application/x-www-form-urlencoded') formParser(req, res, next);
      else
        sendOAuthError(
          res,
          'invalid_request',
          'Send application/json or application/x-www-form-urlencoded.',
        );
    },
    function token(req, res) {
      const body: Record<string, unknown> =
        typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body)
          ? req.body
          : {};
      // Counted before client authentication: tests assert on calls made, whatever their outcome.
      const requested = body['grant_type'];
      if (requested === 'authorization_code' || requested === 'refresh_token') {
        deps.stats.tokenRequests[requested]++;
      }
      const basic = basicCredentials(req.get('authorization'));
      const usedBasic = basic !== undefined;
      if (basic === null) {
        sendOAuthError(res, 'invalid_client', 'Malformed HTTP Basic credentials.', { basic: true });
        return;
      }
      const bodyId = str(body, 'client_id');
      const bodySecret = str(body, 'client_secret');
      if (bodyId === null || bodySecret === null) {
        sendOAuthError(res, 'invalid_request', 'client_id and client_secret must be strings.');
        return;
      }
      if (basic && bodySecret !== undefined) {
        sendOAuthError(res, 'invalid_request', 'Use one client authentication method, not two.');
        return;
      }
      if (basic && bodyId !== undefined && bodyId !== basic.id) {
        sendOAuthError(res, 'invalid_request', 'client_id differs from the Basic credentials.');
        return;
      }
      const clientId = basic?.id ?? bodyId;
      const secret = basic?.secret ?? bodySecret;
      if (clientId === undefined || secret === undefined) {
        sendOAuthError(
          res,
          'invalid_client',
          'Client authentication is required (client_id and client_secret).',
          {
            basic: usedBasic,
          },
        );
        return;
      }
      const app = deps.apps.byClientId(clientId);
      // Compare even for an unknown client so timing does not reveal which ids exist.
      const secretOk = secretsEqual(secret, app?.clientSecret ?? '\u0000unknown-client');
      if (!app || !secretOk) {
        sendOAuthError(res, 'invalid_client', 'Unknown client_id or wrong client_secret.', {
          basic: usedBasic,
        });
        return;
      }
      const grantType = str(body, 'grant_type');
      if (grantType === 'authorization_code') codeGrant(res, app, body);
      else if (grantType === 'refresh_token') refreshGrant(res, app, body);
      else if (grantType === undefined || grantType === null) {
        sendOAuthError(res, 'invalid_request', 'grant_type is required.');
      } else
        sendOAuthError(
          res,
          'unsupported_grant_type',
          'grant_type must be authorization_code or refresh_token.',
        );
    },
  );

  function codeGrant(res: Response, app: RegisteredApp, body: Record<string, unknown>): void {
    const code = str(body, 'code');
    const redirectUri = str(body, 'redirect_uri');
    const verifier = str(body, 'code_verifier');
    for (const [name, v] of [
      ['code', code],
      ['redirect_uri', redirectUri],
      ['code_verifier', verifier],
    ] as const) {
      if (typeof v !== 'string' || v.length === 0) {
        sendOAuthError(res, 'invalid_request', `${name} is required.`);
        return;
      }
    }
    if (!VERIFIER_RE.test(verifier as string)) {
      sendOAuthError(
        res,
        'invalid_request',
        'code_verifier must be 43 to 128 unreserved characters.',
      );
      return;
    }
    const result = deps.tokens.redeemCode({
      code: code as string,
      appId: app.appId,
      redirectUri: redirectUri as string,
      verify: (challenge) => secretsEqual(s256(verifier as string), challenge),
    });
    if (!result.ok) {
      sendOAuthError(res, 'invalid_grant', `${result.reason}.`);
      return;
    }
    tokenResponse(
      res,
      deps.tokens.issueForInstall({
        appId: result.appId,
        storeId: result.storeId,
        scopes: result.scopes,
        codeHash: result.codeHash,
      }),
    );
  }

  function refreshGrant(res: Response, app: RegisteredApp, body: Record<string, unknown>): void {
    const refreshToken = str(body, 'refresh_token');
    if (typeof refreshToken !== 'string' || refreshToken.length === 0) {
      sendOAuthError(res, 'invalid_request', 'refresh_token is required.');
      return;
    }
    const scopeParam = str(body, 'scope');
    if (scopeParam === null) {
      sendOAuthError(res, 'invalid_request', 'scope must be a string.');
      return;
    }
    const scope = scopeParam === undefined ? undefined : parseScopeList(scopeParam);
    const result = deps.tokens.refresh({
      refreshToken,
      appId: app.appId,
      ...(scope ? { scope } : {}),
    });
    if (!result.ok) {
      sendOAuthError(
        res,
        result.reason.startsWith('scope') ? 'invalid_scope' : 'invalid_grant',
        `${result.reason}.`,
      );
      return;
    }
    tokenResponse(res, result.tokens);
  }

  router.all(TOKEN_PATH, function tokenMethod(_req, res) {
    res.set('Allow', 'POST');
    res.status(405);
    res.set('Cache-Control', 'no-store').json({
      error: 'invalid_request',
      error_description: 'The token endpoint accepts POST only.',
    });
  });

  router.get(SESSION_PATH, function session(req, res) {
    res.set('Cache-Control', 'no-store');
    const token = bearerToken(req.get('authorization'));
    if (!token) {
      sendBearerError(res, 'invalid_token');
      return;
    }
    const check = deps.tokens.checkAccessToken(token);
    if (!check.ok) {
      sendBearerError(res, check.code);
      return;
    }
    res.json({
      store_id: check.token.storeId,
      app_id: check.token.appId,
      scopes: check.token.scopes,
      expires_at: new Date(check.token.expiresAt * 1000).toISOString(),
    });
  });

  // Body parser failures (malformed JSON, too large) on the token endpoint: RFC 6749 error, never a 500.
  router.use(function oauthBodyErrors(
    err: unknown,
    req: Request,
    res: Response,
    next: NextFunction,
  ) {
    if (req.path !== TOKEN_PATH && req.path !== DECISION_PATH) {
      next(err);
      return;
    }
    const status = (err as { status?: number }).status;
    if (req.path === TOKEN_PATH) {
      sendOAuthError(
        res,
        'invalid_request',
        status === 413 ? 'The request body is too large.' : 'The request body is malformed.',
      );
    } else {
      errorPage(res, status === 413 ? 413 : 400, 'Invalid request', 'The form could not be read.');
    }
  });

  return router;
}
