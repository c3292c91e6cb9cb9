/**
 * Options of the webhook receiver. `storeApp()` composes these under
 * `webhooks`; `resolveWebhookOptions` validates them once and fills defaults.
 * The platform document leaves signing "not shown", so scheme, header names
 * and secrets are all configurable (docs/platform-contract.md, Webhooks).
 */
import { ConfigError } from '../errors/index.js';
import type { WebhookHeaderNames, WebhookVerifier } from './types.js';

export const WEBHOOK_SECRET_ENV = 'STORE_APP_WEBHOOK_SECRET';

export interface WebhookOptions {
  /**
   * Path the receiver answers on, under wherever `kit.middleware()` is mounted.
   * @default '/webhooks'
   */
  path?: string;
  /**
   * Signing secrets. Several are accepted at once during a rotation: put the
   * new one first, drop the old one once the platform signs with the new one.
   * A string may hold several, comma-separated. With the Standard Webhooks
   * scheme each must look like `whsec_<base64>`.
   * @default process.env.STORE_APP_WEBHOOK_SECRET (comma-separated)
   */
  secrets?: string | readonly string[];
  /**
   * `'standard-webhooks'` (what the local platform signs with), or your own
   * verifier function for another scheme.
   * @default 'standard-webhooks'
   */
  scheme?: 'standard-webhooks' | WebhookVerifier;
  /**
   * Names of the id, timestamp and signature headers (case-insensitive).
   * @default { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' }
   */
  headers?: Partial<WebhookHeaderNames>;
  /**
   * How far the signed timestamp may be from now, in either direction, in seconds.
   * @default 300
   */
  toleranceSeconds?: number;
  /**
   * Largest body accepted, in bytes; larger deliveries get 413 unread.
   * @default 1048576 (1 MB)
   */
  maxBodyBytes?: number;
  /**
   * When handlers take longer than this, the receiver answers 202 and lets
   * them finish in the background. The platform counts a delivery as
   * failed after 10 s. Past this point a handler failure can no longer make
   * the platform retry: it is logged only.
   * @default 5000
   */
  ackTimeoutMs?: number;
  /**
   * How long delivery ids are kept for dedupe, in hours. Must outlast the
   * platform's retries (about 1 h 45 min in all); older ids are pruned at
   * most once an hour, on a delivery.
   * @default 720 (30 days)
   */
  dedupeRetentionHours?: number;
}

export interface ResolvedWebhookOptions {
  path: string;
  secrets: readonly string[];
  scheme: 'standard-webhooks' | WebhookVerifier;
  headers: Readonly<WebhookHeaderNames>;
  toleranceSeconds: number;
  maxBodyBytes: number;
  ackTimeoutMs: number;
  dedupeRetentionHours: number;
}

export const WEBHOOK_DEFAULTS = {
  path: '/webhooks',
  scheme: 'standard-webhooks',
  headers: { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' },
  toleranceSeconds: 300,
  maxBodyBytes: 1_048_576,
  ackTimeoutMs: 5_000,
  dedupeRetentionHours: 720,
} as const satisfies Omit<ResolvedWebhookOptions, 'secrets'>;

const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Validates webhook options and fills defaults. Throws ConfigError naming
 * the setting and the fix. Options win over the environment.
 */
export function resolveWebhookOptions(
  options: WebhookOptions = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedWebhookOptions {
  const path = options.path ?? WEBHOOK_DEFAULTS.path;
  if (typeof path !== 'string' || !path.startsWith('/') || /[\s?#]/.test(path)) {
    throw new ConfigError('webhooks.path', 'must be a path starting with "/", e.g. "/webhooks"');
  }

  const scheme = options.scheme ?? WEBHOOK_DEFAULTS.scheme;
  if (scheme !== 'standard-webhooks' && typeof scheme !== 'function') {
    throw new ConfigError(
      'webhooks.scheme',
      'must be "standard-webhooks" or a verifier function (see docs/webhooks.md)',
    );
  }

  const fromOption = options.secrets !== undefined;
  const setting = fromOption ? 'webhooks.secrets' : WEBHOOK_SECRET_ENV;
  const raw = fromOption ? options.secrets : env[WEBHOOK_SECRET_ENV];
  const secrets = splitSecrets(raw);
  if (secrets.length === 0) {
    throw new ConfigError(
      setting,
      'no webhook signing secret is set: copy the webhook secret (whsec_…) shown with the ' +
        `app's credentials into ${WEBHOOK_SECRET_ENV} (several, comma-separated, during a rotation)`,
    );
  }
  if (scheme === 'standard-webhooks') {
    secrets.forEach((secret, i) => {
      // Never echo the secret: only its position.
      if (!secret.startsWith('whsec_') || !BASE64.test(secret.slice(6))) {
        throw new ConfigError(
          setting,
          `secret #${i + 1} is not a Standard Webhooks secret: expected "whsec_" followed by ` +
            'base64, as shown with the app credentials',
        );
      }
      if (Buffer.from(secret.slice(6), 'base64').length < 16) {
        throw new ConfigError(setting, `secret #${i + 1} decodes to fewer than 16 bytes`);
      }
    });
  }

  const headers = { ...WEBHOOK_DEFAULTS.headers };
  for (const key of ['id', 'timestamp', 'signature'] as const) {
    const value = options.headers?.[key];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !HEADER_NAME.test(value.toLowerCase())) {
      throw new ConfigError(`webhooks.headers.${key}`, 'must be a valid HTTP header name');
    }
    headers[key] = value.toLowerCase() as never;
  }
  if (new Set([headers.id, headers.timestamp, headers.signature]).size !== 3) {
    throw new ConfigError('webhooks.headers', 'id, timestamp and signature need distinct names');
  }

  return {
    path,
    secrets,
    scheme,
    headers,
    toleranceSeconds: positiveInteger(
      'webhooks.toleranceSeconds',
      options.toleranceSeconds,
      WEBHOOK_DEFAULTS.toleranceSeconds,
    ),
    maxBodyBytes: positiveInteger(
      'webhooks.maxBodyBytes',
      options.maxBodyBytes,
      WEBHOOK_DEFAULTS.maxBodyBytes,
    ),
    ackTimeoutMs: positiveInteger(
      'webhooks.ackTimeoutMs',
      options.ackTimeoutMs,
      WEBHOOK_DEFAULTS.ackTimeoutMs,
    ),
    dedupeRetentionHours: retention(options.dedupeRetentionHours),
  };
}

function splitSecrets(raw: unknown): string[] {
  if (raw === undefined || raw === null) return [];
  const parts = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : [raw];
  return parts
    .map((s) => (typeof s === 'string' ? s.trim() : ''))
    .filter((s, i, all) => s.length > 0 && all.indexOf(s) === i);
}

function positiveInteger(setting: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new ConfigError(setting, 'must be a positive integer');
  }
  return value;
}

// Below the platform's retry window a late retry would run the handlers twice.
const MIN_RETENTION_HOURS = 2;

function retention(value: unknown): number {
  const hours = positiveInteger(
    'webhooks.dedupeRetentionHours',
    value,
    WEBHOOK_DEFAULTS.dedupeRetentionHours,
  );
  if (hours < MIN_RETENTION_HOURS) {
    throw new ConfigError(
      'webhooks.dedupeRetentionHours',
      `must be at least ${MIN_RETENTION_HOURS}, longer than the platform's retries`,
    );
  }
  return hours;
}
