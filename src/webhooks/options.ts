/**
 * Options of the webhook receiver. `storeApp()` composes these under
 * `webhooks`; `resolveWebhookOptions` validates them once and fills defaults.
 * The platform document leaves signing "not shown", so scheme, header names
 * and secrets are all configurable (docs/platform-contract.md, Webhooks).
 */
import * as v from 'valibot';
import { fromBase64 } from '../crypto/primitives.js';
import { commaList, fn, integer, parseOptions, required } from '../options/index.js';
import type { WebhookHeaderNames, WebhookVerifier } from './types.js';

/** Bytes a base64 secret decodes to (0 when it does not decode). */
function decodedLength(text: string): number {
  try {
    return fromBase64(text).length;
  } catch {
    return 0;
  }
}

export const WEBHOOK_SECRET_ENV = 'STORE_APP_WEBHOOK_SECRET';

export const WEBHOOK_DEFAULTS = {
  path: '/webhooks',
  scheme: 'standard-webhooks',
  headers: { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' },
  toleranceSeconds: 300,
  maxBodyBytes: 1_048_576,
  bodyTimeoutMs: 10_000,
  maxUnverifiedBytes: 16_777_216,
  ackTimeoutMs: 5_000,
  dedupeRetentionHours: 720,
} as const;

const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// Below the platform's retry window a late retry would run the handlers twice.
const MIN_RETENTION_HOURS = 2;

const NO_SECRET =
  "copy the webhook secret (whsec_…) shown with the app's credentials into " +
  `${WEBHOOK_SECRET_ENV} (several, comma-separated, during a rotation).`;

const headerName = v.pipe(
  v.string('must be a valid HTTP header name.'),
  v.transform((h) => h.toLowerCase()),
  v.regex(HEADER_NAME, 'must be a valid HTTP header name.'),
);

export const webhookOptionsSchema = v.pipe(
  v.strictObject({
    /**
     * Path the receiver answers on, under wherever `kit.middleware()` is mounted.
     * @default '/webhooks'
     */
    path: v.optional(
      v.pipe(
        v.string('must be a path starting with "/", e.g. "/webhooks".'),
        v.check(
          (p) => p.startsWith('/') && !/[\s?#]/.test(p),
          'must be a path starting with "/", e.g. "/webhooks".',
        ),
      ),
      WEBHOOK_DEFAULTS.path,
    ),
    /**
     * Signing secrets. Several are accepted at once during a rotation: put the
     * new one first, drop the old one once the platform signs with the new one.
     * A string may hold several, comma-separated. With the Standard Webhooks
     * scheme each must look like `whsec_<base64>`.
     * @default process.env.STORE_APP_WEBHOOK_SECRET (comma-separated)
     */
    secrets: required(
      v.pipe(
        commaList('give the secrets as strings.'),
        v.check((list) => list.length > 0, `is empty; ${NO_SECRET}`),
      ),
      NO_SECRET,
      { placeholderFix: NO_SECRET },
    ),
    /**
     * `'standard-webhooks'` (what the local platform signs with), or your own
     * verifier function for another scheme; the two are exclusive ways of
     * verifying (secrets are checked for the `whsec_` form only with the first).
     * @default 'standard-webhooks'
     */
    scheme: v.optional(
      v.union(
        [v.literal('standard-webhooks'), fn<WebhookVerifier>('')],
        'must be "standard-webhooks" or a verifier function (see docs/webhooks.md).',
      ),
      WEBHOOK_DEFAULTS.scheme,
    ),
    /**
     * Names of the id, timestamp and signature headers (case-insensitive).
     * @default { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' }
     */
    headers: v.optional(
      v.pipe(
        v.strictObject({
          id: v.optional(headerName, WEBHOOK_DEFAULTS.headers.id),
          timestamp: v.optional(headerName, WEBHOOK_DEFAULTS.headers.timestamp),
          signature: v.optional(headerName, WEBHOOK_DEFAULTS.headers.signature),
        }),
        v.check(
          (h) => new Set([h.id, h.timestamp, h.signature]).size === 3,
          'id, timestamp and signature need distinct names.',
        ),
      ),
      {},
    ),
    /**
     * How far the signed timestamp may be from now, in either direction, in seconds.
     * @default 300
     */
    toleranceSeconds: v.optional(integer(1), WEBHOOK_DEFAULTS.toleranceSeconds),
    /**
     * Largest body accepted, in bytes; larger deliveries get 413 unread.
     * @default 1048576 (1 MB)
     */
    maxBodyBytes: v.optional(integer(1), WEBHOOK_DEFAULTS.maxBodyBytes),
    /**
     * How long a delivery's body may take to arrive, in milliseconds, from the
     * moment its headers passed; a slower sender gets 408 and its connection is
     * closed, so a sender cannot hold a socket and a buffer by dribbling bytes.
     * @default 10000
     */
    bodyTimeoutMs: v.optional(integer(100, 600_000), WEBHOOK_DEFAULTS.bodyTimeoutMs),
    /**
     * Most body bytes held at once, across all deliveries, before their
     * signature is checked. Each delivery reserves its declared length (or
     * `maxBodyBytes` when it declares none) before reading; past this bound a
     * delivery gets 503 with `Retry-After` unread (the platform retries). At
     * least `maxBodyBytes`.
     * @default 16777216 (16 MiB)
     */
    maxUnverifiedBytes: v.optional(integer(1), WEBHOOK_DEFAULTS.maxUnverifiedBytes),
    /**
     * When handlers take longer than this, the receiver answers 202 and lets
     * them finish in the background. The platform counts a delivery as
     * failed after 10 s. Past this point a handler failure can no longer make
     * the platform retry: it is logged only.
     * @default 5000
     */
    ackTimeoutMs: v.optional(integer(1), WEBHOOK_DEFAULTS.ackTimeoutMs),
    /**
     * How long delivery ids are kept for dedupe, in hours. Must outlast the
     * platform's retries (about 1 h 45 min in all); older ids are pruned at
     * most once an hour, on a delivery.
     * @default 720 (30 days)
     */
    dedupeRetentionHours: v.optional(
      v.pipe(
        integer(1),
        v.minValue(
          MIN_RETENTION_HOURS,
          `must be at least ${MIN_RETENTION_HOURS}, longer than the platform's retries.`,
        ),
      ),
      WEBHOOK_DEFAULTS.dedupeRetentionHours,
    ),
  }),
  v.forward(
    v.check(
      (o) => o.maxUnverifiedBytes >= o.maxBodyBytes,
      'must be at least maxBodyBytes, or no delivery of the largest accepted size could be read.',
    ),
    ['maxUnverifiedBytes'],
  ),
  v.forward(
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed || dataset.value.scheme !== 'standard-webhooks') return;
      // Never echo a secret: only its position.
      for (const [i, secret] of dataset.value.secrets.entries()) {
        if (!secret.startsWith('whsec_') || !BASE64.test(secret.slice(6))) {
          addIssue({
            message: `secret #${i + 1} is not a Standard Webhooks secret: expected "whsec_" followed by base64, as shown with the app credentials.`,
          });
          return;
        }
        if (decodedLength(secret.slice(6)) < 16) {
          addIssue({ message: `secret #${i + 1} decodes to fewer than 16 bytes.` });
          return;
        }
      }
    }),
    ['secrets'],
  ),
);

export type WebhookOptions = v.InferInput<typeof webhookOptionsSchema>;

export interface ResolvedWebhookOptions {
  path: string;
  secrets: readonly string[];
  scheme: 'standard-webhooks' | WebhookVerifier;
  headers: Readonly<WebhookHeaderNames>;
  toleranceSeconds: number;
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  maxUnverifiedBytes: number;
  ackTimeoutMs: number;
  dedupeRetentionHours: number;
}

/** Environment variables backing webhook options. */
export const WEBHOOK_ENV = { secrets: WEBHOOK_SECRET_ENV } as const;

/**
 * Validates webhook options and fills defaults. Throws ConfigError naming
 * the setting (the environment variable when the value came from there)
 * and the fix. Options win over the environment.
 */
export function resolveWebhookOptions(
  options: WebhookOptions = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedWebhookOptions {
  const fromEnv = options.secrets === undefined;
  const raw = env[WEBHOOK_SECRET_ENV]?.trim();
  const input = { ...options, secrets: fromEnv ? (raw === '' ? undefined : raw) : options.secrets };
  return parseOptions(webhookOptionsSchema, input, {
    prefix: 'webhooks',
    ...(fromEnv ? { settings: new Map([['webhooks.secrets', WEBHOOK_SECRET_ENV]]) } : {}),
  });
}
