/**
 * The refresh error apps branch on, apart from the token manager (and its
 * telemetry), so the main entry can export it without loading them.
 */
import { StoreApiError } from '../client/errors.js';

export const REFRESH_UNAVAILABLE = 'REFRESH_UNAVAILABLE' as const;

/** The token endpoint could not refresh the token right now (network, 5xx, lease wait timed out). */
export class RefreshUnavailableError extends StoreApiError<typeof REFRESH_UNAVAILABLE> {
  constructor(message: string, context: { cause?: unknown } = {}) {
    super(REFRESH_UNAVAILABLE, message, { status: 503, ...context });
  }
}
