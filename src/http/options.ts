/**
 * Options of the HTTP layer: session, embedding, logger and security headers.
 */
import type { HelmetOptions } from 'helmet';
import type { DestinationStream, LevelWithSilent, Logger } from 'pino';

export interface SessionOptions {
  /**
   * Secret signing the session cookie, at least 32 characters. An array rotates:
   * the first signs, all verify.
   * @default process.env.STORE_APP_SESSION_SECRET (required)
   */
  secret?: string | readonly string[];
  /**
   * Name of the session cookie.
   * @default 'store_app.sid'
   */
  cookieName?: string;
  /**
   * Lifetime of a session, in seconds.
   * @default 86400
   */
  maxAgeSeconds?: number;
}

export interface EmbeddedOptions {
  /**
   * The app runs inside the merchant admin's iframe: session cookies become
   * `SameSite=None; Secure; Partitioned` (when the app URL is HTTPS), CSP allows
   * the admin as frame ancestor, and installs end on the admin's app page.
   * @default true
   */
  enabled?: boolean;
  /**
   * Origin allowed to frame the app (CSP `frame-ancestors`).
   * @default the origin of `oauth.authUrl`
   */
  adminOrigin?: string;
  /**
   * Where the merchant lands after an embedded install; `{client_id}` and `{store_id}` are replaced.
   * @default '{authUrl}/admin/stores/{store_id}/apps/{client_id}'
   */
  adminAppUrl?: string;
  /**
   * Query parameter carrying the admin's launch JWT.
   * @default 'launch'
   */
  launchParam?: string;
}

export interface LoggerOptions {
  /**
   * Minimum level logged.
   * @default the level of `instance` if given, else 'info' ('silent' when NODE_ENV=test)
   */
  level?: LevelWithSilent;
  /**
   * Your pino logger; the kit logs through a child of it with its redaction added.
   * @default a new pino logger writing to stdout
   */
  instance?: Logger;
  /**
   * Where a kit-made logger writes (ignored with `instance`).
   * @default stdout
   */
  destination?: DestinationStream;
}

export interface SecurityHeadersOptions {
  /**
   * Set helmet's headers on every response passing through `kit.middleware()`.
   * @default true
   */
  enabled?: boolean;
  /**
   * Extra helmet options merged over the kit's (the kit's `frame-ancestors` is kept).
   * @default {}
   */
  helmet?: HelmetOptions;
  /**
   * `'protected'`: CSP `frame-ancestors` (the admin origin when embedded, else
   * `'none'` plus `X-Frame-Options: DENY`) is always sent, whatever `helmet`
   * says. `'unprotected'`: neither is sent (your proxy sets them); the kit
   * logs a warning at start.
   * @default 'protected'
   */
  framing?: 'protected' | 'unprotected';
}

export interface ResolvedHttpOptions {
  session: {
    secret: string[];
    cookieName: string;
    maxAgeSeconds: number;
    /** True when the app URL is HTTPS (cookies get Secure). */
    secure: boolean;
    sameSite: 'none' | 'lax';
    partitioned: boolean;
  };
  embedded: {
    enabled: boolean;
    adminOrigin: string;
    adminAppUrl: string;
    launchParam: string;
  };
  logger: {
    level: LevelWithSilent;
    instance: Logger | undefined;
    destination: DestinationStream | undefined;
  };
  securityHeaders: {
    enabled: boolean;
    helmet: HelmetOptions;
    framing: 'protected' | 'unprotected';
  };
}
