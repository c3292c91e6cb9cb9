import type { Response } from 'express';

/** RFC 6749 §5.2 error body with the document's statuses. */
export const OAUTH_ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_client: 401,
  invalid_grant: 400,
  invalid_scope: 400,
  invalid_request: 400,
  unsupported_grant_type: 400,
  unauthorized_client: 400,
  access_denied: 403,
};

export function sendOAuthError(
  res: Response,
  error: string,
  description: string,
  opts: { basic?: boolean } = {},
): void {
  res.status(OAUTH_ERROR_STATUS[error] ?? 400);
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  if (error === 'invalid_client' && opts.basic) {
    res.set('WWW-Authenticate', 'Basic realm="store-platform", charset="UTF-8"');
  }
  res.json({ error, error_description: description });
}

export type BearerErrorCode =
  | 'invalid_token'
  | 'token_expired'
  | 'token_revoked'
  | 'missing_store_id'
  | 'store_mismatch';

const BEARER_ERRORS: Readonly<Record<BearerErrorCode, [number, string]>> = {
  invalid_token: [401, 'The access token is missing, malformed or unknown.'],
  token_expired: [401, 'The access token has expired; refresh it.'],
  token_revoked: [401, 'The access token was revoked (the app was uninstalled); stop using it.'],
  missing_store_id: [400, 'The X-Store-Id header is required.'],
  store_mismatch: [403, 'The access token belongs to another store than X-Store-Id.'],
};

/** The document's API error body for authentication failures on bearer-protected routes. */
export function sendBearerError(res: Response, code: BearerErrorCode): void {
  const [status, message] = BEARER_ERRORS[code];
  if (status === 401) res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
  res.status(status).json({ error: message, code, details: [] });
}

/** `Authorization: Bearer <token>` → token, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(header);
  return m?.[1];
}
