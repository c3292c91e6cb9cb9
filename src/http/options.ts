/**
 * Options of the HTTP layer: session, embedding and logger (the security headers'
 * options are the Express shell's: src/shells/express/options.ts).
 */

import type { DestinationStream, LevelWithSilent, Logger } from 'pino';
import * as v from 'valibot';
import type { CallbackSessionStore } from '../core/session-store.js';
import { boolean, cookieName, httpUrl, integer, required } from '../options/index.js';

/** Environment variables backing HTTP options. */
export const SESSION_ENV = { secret: 'STORE_APP_SESSION_SECRET' } as const;

const SECRET_MIN_LENGTH = 32;
const SECRET_FIX = `set ${SESSION_ENV.secret} to a random string of at least ${SECRET_MIN_LENGTH} characters (e.g. \`npx store-app keygen\`).`;

export const sessionOptionsSchema = v.strictObject({
  /**
   * Secret signing the session cookie, at least 32 characters. An array rotates:
   * the first signs, all verify.
   * @default process.env.STORE_APP_SESSION_SECRET (required)
   */
  secret: required(
    v.pipe(
      v.union(
        [v.string(), v.custom<readonly string[]>(Array.isArray)],
        `must be a string or an array of strings; ${SECRET_FIX}`,
      ),
      v.transform((s): unknown[] => (typeof s === 'string' ? [s] : [...s])),
      v.rawTransform(({ dataset, addIssue, NEVER }) => {
        if (dataset.value.length === 0) {
          addIssue({ message: `no session secret is set; ${SECRET_FIX}` });
          return NEVER;
        }
        for (const [i, secret] of dataset.value.entries()) {
          // Never echo the secret: only its position.
          if (typeof secret !== 'string' || secret.length < SECRET_MIN_LENGTH) {
            addIssue({
              message: `secret #${i + 1} is shorter than ${SECRET_MIN_LENGTH} characters; use a random value (e.g. \`npx store-app keygen\`).`,
            });
            return NEVER;
          }
        }
        return dataset.value as string[];
      }),
    ),
    // required() says "is not set; " before this: only the fix here.
    SECRET_FIX,
    { placeholderFix: SECRET_FIX },
  ),
  /**
   * Name of the session cookie.
   * @default 'store_app.sid'
   */
  cookieName: v.optional(cookieName(), 'store_app.sid'),
  /**
   * Lifetime of a session, in seconds.
   * @default 86400
   */
  maxAgeSeconds: v.optional(integer(60), 86_400),
  /**
   * An express-session store of your own (e.g. Redis) instead of the storage
   * adapter's sessions. The kit's purge cannot delete a store's sessions kept
   * there (they hold the store id only). A MemoryStore is refused in spirit:
   * it loses sessions on restart and is not shared by instances, so the kit
   * warns at start when one is configured outside development and test.
   * @default undefined (sessions live in the storage adapter)
   */
  store: v.optional(
    v.custom<CallbackSessionStore>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        ['get', 'set', 'destroy'].every(
          (m) => typeof (value as Record<string, unknown>)[m] === 'function',
        ),
      'must be an express-session Store (an object with get, set and destroy).',
    ),
  ),
});

export type SessionOptions = v.InferInput<typeof sessionOptionsSchema>;

const LAUNCH_PARAM = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The `embedded` schema. `relaxed` (NODE_ENV development or test) accepts a
 * plain-HTTP admin origin outside loopback.
 */
export function embeddedOptionsSchema(relaxed: boolean) {
  return v.strictObject({
    /**
     * The app runs inside the merchant admin's iframe: session cookies become
     * `SameSite=None; Secure; Partitioned` (when the app URL is HTTPS), CSP allows
     * the admin as frame ancestor, and installs end on the admin's app page.
     * @default true
     */
    enabled: v.optional(boolean(), true),
    /**
     * Origin allowed to frame the app (CSP `frame-ancestors`).
     * @default the origin of `oauth.authUrl`
     */
    adminOrigin: v.optional(
      v.pipe(
        httpUrl('the merchant admin origin', relaxed),
        v.transform((u) => new URL(u).origin),
      ),
    ),
    /**
     * Where the merchant lands after an embedded install; `{client_id}` and `{store_id}` are replaced.
     * @default '{authUrl}/admin/stores/{store_id}/apps/{client_id}'
     */
    adminAppUrl: v.optional(
      v.pipe(
        v.string('must be a URL template containing {store_id}.'),
        v.includes('{store_id}', 'must be a URL template containing {store_id}.'),
      ),
      '{authUrl}/admin/stores/{store_id}/apps/{client_id}',
    ),
    /**
     * Query parameter carrying the admin's launch JWT.
     * @default 'launch'
     */
    launchParam: v.optional(
      v.pipe(
        v.string('must be a query parameter name.'),
        v.regex(LAUNCH_PARAM, 'must be a query parameter name.'),
      ),
      'launch',
    ),
  });
}

export type EmbeddedOptions = v.InferInput<ReturnType<typeof embeddedOptionsSchema>>;

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const level = v.optional(v.picklist(LEVELS, `must be one of ${LEVELS.join(', ')}.`));

/**
 * Any logger with the usual level methods: pino, bunyan, console, or an
 * adapter over winston or another. The kit calls `method(object, message)`
 * (pino's order) with the object already redacted. `trace` falls back to
 * `debug` and `fatal` to `error`; `child` is not needed (the kit's bindings
 * such as `component` and `storeId` are in each object).
 */
export interface StoreAppLogger {
  trace?(obj: object, msg?: string): unknown;
  debug(obj: object, msg?: string): unknown;
  info(obj: object, msg?: string): unknown;
  warn(obj: object, msg?: string): unknown;
  error(obj: object, msg?: string): unknown;
  fatal?(obj: object, msg?: string): unknown;
  /** A string level (`'info'`, …) is read as the default of `logger.level`. */
  level?: unknown;
}

/** The methods every logger given as `logger.instance` must have. */
export const LOGGER_METHODS = ['debug', 'info', 'warn', 'error'] as const;

const LOGGER_FIX =
  'pass a pino logger, or any object with debug(), info(), warn() and error() methods (trace() and fatal() are optional).';

/**
 * `logger`: either your own logger `instance` (pino: the kit logs through a
 * child of it; any other: the kit's redacting pino logger forwards each
 * record to it) or a kit-made logger writing to `destination`; the two modes
 * exclude each other.
 */
export const loggerOptionsSchema = v.union(
  [
    v.strictObject({
      /**
       * Minimum level logged.
       * @default process.env.LOG_LEVEL, else the level of `instance` when it has a string
       * `level`, else as without one
       */
      level,
      /**
       * Your logger: pino (the kit logs through a child of it, with its
       * redaction added) or any object with the level methods (records are
       * redacted before it sees them).
       */
      instance: v.pipe(
        v.custom<Logger | StoreAppLogger>(
          (x) => (typeof x === 'object' || typeof x === 'function') && x !== null,
          `must be a logger object; ${LOGGER_FIX}`,
        ),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          const candidate = dataset.value as unknown as Record<string, unknown>;
          const missing = LOGGER_METHODS.filter((m) => typeof candidate[m] !== 'function');
          if (missing.length > 0) {
            addIssue({
              message: `is missing ${missing.map((m) => `${m}()`).join(', ')}; ${LOGGER_FIX}`,
            });
          }
        }),
      ),
    }),
    v.strictObject({
      /**
       * Minimum level logged.
       * @default process.env.LOG_LEVEL, else 'info' ('silent' when NODE_ENV=test)
       */
      level,
      /**
       * Where the kit-made logger writes.
       * @default stdout
       */
      destination: v.optional(
        v.custom<DestinationStream>(
          (x) =>
            typeof x === 'object' &&
            x !== null &&
            typeof (x as DestinationStream).write === 'function',
          'must be a writable stream (an object with write()).',
        ),
      ),
    }),
  ],
  'takes either `instance` (your logger) or `destination` (where a kit-made logger writes), not both.',
);

export type LoggerOptions = v.InferInput<typeof loggerOptionsSchema>;

export interface ResolvedHttpOptions {
  session: {
    secret: string[];
    cookieName: string;
    maxAgeSeconds: number;
    /** True when the app URL is HTTPS (cookies get Secure). */
    secure: boolean;
    sameSite: 'none' | 'lax';
    partitioned: boolean;
    /** The app's own express-session store; undefined: the storage adapter's sessions. */
    store?: CallbackSessionStore | undefined;
  };
  embedded: {
    enabled: boolean;
    adminOrigin: string;
    adminAppUrl: string;
    launchParam: string;
  };
  logger: {
    level: LevelWithSilent;
    instance: Logger | StoreAppLogger | undefined;
    destination: DestinationStream | undefined;
  };
}
