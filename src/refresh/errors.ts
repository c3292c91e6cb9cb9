/**
 * The refresh error apps branch on, apart from the token manager (and its
 * telemetry), so the main entry can export it without loading them.
 */
import { StoreApiError } from '../client/errors.js';
import { OAUTH_ENV } from '../oauth/env.js';

export const REFRESH_UNAVAILABLE = 'REFRESH_UNAVAILABLE' as const;

/** The token endpoint could not refresh the token right now (network, 5xx, lease wait timed out). */
export class RefreshUnavailableError extends StoreApiError<typeof REFRESH_UNAVAILABLE> {
  constructor(message: string, context: { cause?: unknown } = {}) {
    super(REFRESH_UNAVAILABLE, message, { status: 503, ...context });
  }
}

export const REFRESH_CLIENT_REJECTED = 'REFRESH_CLIENT_REJECTED' as const;

/**
 * The platform refused the app's own credentials on a refresh (`invalid_client`):
 * the client secret or id is wrong, not the installation. No retry can help
 * until the configuration is fixed; the installation is kept as it was.
 */
export class RefreshClientRejectedError extends StoreApiError<typeof REFRESH_CLIENT_REJECTED> {
  constructor(context: { cause?: unknown } = {}) {
    super(
      REFRESH_CLIENT_REJECTED,
      `The platform refused the app's client credentials (invalid_client) while refreshing an access token: ${OAUTH_ENV.clientSecret} (or oauth.clientSecret) is wrong or belongs to another app. Copy the client id and secret from the developer dashboard into ${OAUTH_ENV.clientId} and ${OAUTH_ENV.clientSecret}, then restart. The installation was kept.`,
      { status: 500, ...context },
    );
  }
}
