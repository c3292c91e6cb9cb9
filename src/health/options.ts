/**
 * `storeApp({ health })`: the opt-in health endpoint. Absent (the default),
 * no route is mounted; `kit.health()` still answers for an app that mounts
 * its own, behind its own guard.
 */
import * as v from 'valibot';
import { integer, urlPath } from '../options/index.js';

/** The environment variable backing `health.token`. */
export const HEALTH_TOKEN_ENV = 'STORE_APP_HEALTH_TOKEN';
const MIN_TOKEN_LENGTH = 24;

export const healthOptionsSchema = v.pipe(
  v.strictObject({
    /**
     * Path of the `GET` route `kit.middleware()` mounts. It is not behind any
     * authentication: it tells whoever asks whether the database answers, how
     * many purges are pending and when a refresh last failed (never a store id,
     * token, URL or error message).
     * @default '/healthz'
     */
    path: v.optional(urlPath(), '/healthz'),
    /**
     * How long the database check may take before it counts as unreachable, in ms.
     * @default 1000
     */
    dbTimeoutMs: v.optional(integer(10, 30_000), 1000),
    /**
     * How long one report is reused, in ms: a flood of probes costs one
     * database query per period. 0 checks on every request (still one at a time).
     * @default 1000
     */
    cacheMs: v.optional(integer(0, 60_000), 1000),
    /**
     * Who sees the report's detail (database latency, purge counts, the last
     * refresh failure) on the route. `'guarded'`: only a request with
     * `Authorization: Bearer <health.token>`; everyone else gets liveness only
     * (`{ "status" }`, 200 or 503). `'public'`: everyone (the kit warns at start).
     * @default 'guarded'
     */
    detail: v.optional(
      v.picklist(['guarded', 'public'], 'must be "guarded" or "public".'),
      'guarded',
    ),
    /**
     * The bearer token that unlocks the detail when `detail` is `'guarded'`; at
     * least 24 characters (e.g. `openssl rand -base64 32`). Without it nobody
     * gets the detail over HTTP (`kit.health()` still has it).
     * @default process.env.STORE_APP_HEALTH_TOKEN
     */
    token: v.optional(
      v.pipe(
        v.string('must be a string.'),
        v.minLength(
          MIN_TOKEN_LENGTH,
          `must be at least ${MIN_TOKEN_LENGTH} characters; generate one with \`openssl rand -base64 32\`.`,
        ),
        v.regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces.'),
      ),
    ),
  }),
  v.forward(
    v.check(
      (o) => !(o.detail === 'public' && o.token !== undefined),
      `is 'public' while a health token is set (health.token or ${HEALTH_TOKEN_ENV}), which would then guard nothing; drop health.detail to keep the detail behind the token.`,
    ),
    ['detail'],
  ),
);

export type HealthOptions = v.InferInput<typeof healthOptionsSchema>;

export interface ResolvedHealthOptions {
  /** null: no route mounted. */
  path: string | null;
  dbTimeoutMs: number;
  cacheMs: number;
  detail: 'guarded' | 'public';
  token?: string | undefined;
}

/** Defaults when `health` is not given: no route, the same check for `kit.health()`. */
export const HEALTH_DEFAULTS: ResolvedHealthOptions = {
  path: null,
  dbTimeoutMs: 1000,
  cacheMs: 1000,
  detail: 'guarded',
};

/**
 * The start-up warning for a route that shows the detail to anyone, or
 * undefined. (A guarded route without a token shows liveness only.)
 */
export function healthDetailWarning(options: ResolvedHealthOptions): string | undefined {
  if (options.path === null || options.detail !== 'public') return undefined;
  return `The health route ${options.path} shows database latency, pending purges and refresh failures to anyone who asks (health.detail: 'public'). Set ${HEALTH_TOKEN_ENV} and drop health.detail, so only a request with that bearer token sees the detail.`;
}
