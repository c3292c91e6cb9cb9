/**
 * Options of `kit.authenticated()` and the app session token. `storeApp()`
 * composes these under `authenticated`.
 */
import { ConfigError } from '../errors/index.js';

export interface AuthenticatedOptions {
  /**
   * Lifetime of an app session token (the HS256 JWT the embedded frontend sends
   * as `Authorization: Bearer`), in seconds.
   * @default 300
   */
  sessionTokenTtlSeconds?: number;
  /**
   * Clock tolerance when checking a session token's `exp`/`iat`, in seconds.
   * @default 5
   */
  clockToleranceSeconds?: number;
  /**
   * Header that tells a fetch/XHR caller where to re-authorise.
   * @default 'X-Store-App-Reauthorize'
   */
  reauthorizeHeader?: string;
}

export type ResolvedAuthenticatedOptions = Required<AuthenticatedOptions>;

export function resolveAuthenticatedOptions(
  options: AuthenticatedOptions = {},
  prefix = 'authenticated',
): ResolvedAuthenticatedOptions {
  const ttl = options.sessionTokenTtlSeconds ?? 300;
  if (!Number.isInteger(ttl) || ttl < 10 || ttl > 3600) {
    throw new ConfigError(
      `${prefix}.sessionTokenTtlSeconds`,
      'must be an integer from 10 to 3600.',
    );
  }
  const tol = options.clockToleranceSeconds ?? 5;
  if (!Number.isInteger(tol) || tol < 0 || tol > 60) {
    throw new ConfigError(`${prefix}.clockToleranceSeconds`, 'must be an integer from 0 to 60.');
  }
  const header = options.reauthorizeHeader ?? 'X-Store-App-Reauthorize';
  if (!/^[A-Za-z0-9-]+$/.test(header)) {
    throw new ConfigError(`${prefix}.reauthorizeHeader`, 'must be a valid HTTP header name.');
  }
  return {
    sessionTokenTtlSeconds: ttl,
    clockToleranceSeconds: tol,
    reauthorizeHeader: header,
  };
}
