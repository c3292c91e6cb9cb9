/**
 * Pure Standard Webhooks verification: raw bytes + headers + secrets in, a
 * typed event out, or a WebhookVerificationError. No HTTP here, so it can be
 * used from any framework and tested byte by byte.
 *
 * Scheme (https://www.standardwebhooks.com/): the signature header holds one
 * or more space-separated `v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`,
 * keyed with the base64-decoded part of a `whsec_` secret.
 */
import {
  concat,
  fromBase64,
  fromUtf8,
  hmacSha256,
  nodeCrypto,
  timingSafeEqual,
  toBase64,
  utf8,
} from '../crypto/primitives.js';
import {
  INVALID_HEADERS,
  INVALID_PAYLOAD,
  MISSING_HEADERS,
  MISSING_SIGNATURE,
  SIGNATURE_MISMATCH,
  TIMESTAMP_OUT_OF_TOLERANCE,
  WebhookVerificationError,
} from './errors.js';
import { WEBHOOK_DEFAULTS } from './options.js';
import type {
  GenericWebhookPayload,
  WebhookEvent,
  WebhookHeaderNames,
  WebhookHeaders,
} from './types.js';

export interface VerifyOptions {
  /** @default { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } */
  headers?: Partial<WebhookHeaderNames>;
  /** @default 300 */
  toleranceSeconds?: number;
  /** Current time in Unix seconds (tests). @default Date.now() / 1000 */
  nowSeconds?: number;
}

// Generous for real ids and signature lists, small enough that a hostile
// header cannot make us hash or split megabytes.
const MAX_ID_LENGTH = 256;
const MAX_SIGNATURE_HEADER_LENGTH = 4096;
const ID_PATTERN = /^[\x21-\x7e]+$/;
const TIMESTAMP_PATTERN = /^\d{1,12}$/;

/** base64 of a 32-byte MAC: 44 characters, one `=`. */
const MAC_BASE64 = /^[A-Za-z0-9+/]{43}=$/;

/** What `verifySignature` vouches for: the delivery's id and signing time. */
export interface VerifiedDelivery {
  id: string;
  /** `webhook-timestamp`, Unix seconds. */
  timestampSeconds: number;
}

/**
 * Verifies one delivery and returns the parsed, typed event: the signature
 * over the raw bytes first (`verifySignature`), then the JSON (`parsePayload`),
 * so unsigned bytes are never parsed.
 */
export function verify(
  rawBody: Uint8Array,
  headers: WebhookHeaders,
  secrets: readonly string[],
  options: VerifyOptions = {},
): WebhookEvent {
  const { id, timestampSeconds } = verifySignature(rawBody, headers, secrets, options);
  const payload = parsePayload(rawBody);
  return {
    id,
    topic: payload.type,
    timestamp: new Date(timestampSeconds * 1000),
    payload,
    // A Buffer on Node, Bun and Deno (what the receiver passes there); the bytes as given on Workers.
    rawBody: rawBody as Buffer,
  };
}

/** The delivery's headers, checked for presence, shape and timestamp tolerance. */
export interface CheckedHeaders {
  id: string;
  timestamp: string;
  signature: string;
  seconds: number;
}

/**
 * Checks the id, timestamp and signature headers (presence, shape, the
 * timestamp's tolerance) without the body; throws WebhookVerificationError.
 * The receiver runs it before reading a single body byte, so an unsigned or
 * stale delivery costs no buffering.
 */
export function checkDeliveryHeaders(
  headers: WebhookHeaders,
  options: VerifyOptions = {},
): CheckedHeaders {
  const names =
    options.headers === undefined
      ? WEBHOOK_DEFAULTS.headers
      : { ...WEBHOOK_DEFAULTS.headers, ...options.headers };
  const tolerance = options.toleranceSeconds ?? WEBHOOK_DEFAULTS.toleranceSeconds;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);

  const id = singleHeader(headers, names.id);
  const timestamp = singleHeader(headers, names.timestamp);
  const signature = singleHeader(headers, names.signature);
  if (id === undefined || timestamp === undefined) {
    throw new WebhookVerificationError(
      MISSING_HEADERS,
      `Missing webhook header(s): ${[id === undefined ? names.id : '', timestamp === undefined ? names.timestamp : ''].filter(Boolean).join(', ')}`,
    );
  }
  if (id.length > MAX_ID_LENGTH || !ID_PATTERN.test(id)) {
    throw new WebhookVerificationError(INVALID_HEADERS, `Header ${names.id} is malformed`);
  }
  if (!TIMESTAMP_PATTERN.test(timestamp)) {
    throw new WebhookVerificationError(
      INVALID_HEADERS,
      `Header ${names.timestamp} must be Unix seconds`,
    );
  }
  if (signature === undefined || signature.trim() === '') {
    throw new WebhookVerificationError(MISSING_SIGNATURE, `The delivery is not signed`);
  }
  if (
    signature.length > MAX_SIGNATURE_HEADER_LENGTH ||
    // Three memchr-like scans cost less than one regex over the header.
    signature.includes('\n') ||
    signature.includes('\r') ||
    signature.includes('\0')
  ) {
    throw new WebhookVerificationError(INVALID_HEADERS, `Header ${names.signature} is malformed`);
  }

  const seconds = Number(timestamp);
  if (Math.abs(now - seconds) > tolerance) {
    throw new WebhookVerificationError(
      TIMESTAMP_OUT_OF_TOLERANCE,
      `The delivery's timestamp is more than ${tolerance} s from now (replayed, or clocks disagree)`,
    );
  }

  return { id, timestamp, signature, seconds };
}

/**
 * Checks the headers, the timestamp tolerance and the signature of the raw
 * bytes without parsing them; throws WebhookVerificationError. For callers
 * that parse (or stream) the body themselves.
 */
export function verifySignature(
  rawBody: Uint8Array,
  headers: WebhookHeaders,
  secrets: readonly string[],
  options: VerifyOptions = {},
): VerifiedDelivery {
  const { id, timestamp, signature, seconds } = checkDeliveryHeaders(headers, options);

  const prefix = `${id}.${timestamp}.`;
  let matched = false;
  for (const secret of secrets) {
    const expected = mac(secretKey(secret), prefix, rawBody);
    let from = 0;
    while (from < signature.length) {
      let to = signature.indexOf(' ', from);
      if (to < 0) to = signature.length;
      if (to - from > 3 && signature.startsWith('v1,', from)) {
        // Only a MAC's exact base64 is decoded; anything else (longer, shorter) cannot match.
        const candidate = signature.slice(from + 3, to);
        // Every candidate is compared (no early exit) so timing does not reveal which matched.
        if (MAC_BASE64.test(candidate) && timingSafeEqual(expected, fromBase64(candidate))) {
          matched = true;
        }
      }
      from = to + 1;
    }
  }
  if (!matched) {
    throw new WebhookVerificationError(
      SIGNATURE_MISMATCH,
      'No webhook signature matches the configured secret(s)',
    );
  }
  return { id, timestampSeconds: seconds };
}

/** Parses a verified body: a JSON object with a string `type`. */
export function parsePayload(rawBody: Uint8Array): GenericWebhookPayload {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fromUtf8(rawBody));
  } catch {
    throw new WebhookVerificationError(INVALID_PAYLOAD, 'The webhook body is not valid JSON');
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    Array.isArray(parsed) ||
    typeof (parsed as { type?: unknown }).type !== 'string' ||
    (parsed as { type: string }).type.length === 0
  ) {
    throw new WebhookVerificationError(
      INVALID_PAYLOAD,
      'The webhook body must be a JSON object with a string "type"',
    );
  }
  return parsed as GenericWebhookPayload;
}

/**
 * Signs like a Standard Webhooks sender (tests, local tools): returns the
 * three headers for `body`.
 */
export function sign(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: Uint8Array | string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const signature = toBase64(
    mac(
      secretKey(secret),
      `${id}.${timestampSeconds}.`,
      typeof body === 'string' ? utf8(body) : body,
    ),
  );
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}

// Decoded keys of the secrets seen, so a delivery costs no base64 decode and no
// key import. Secrets come from configuration (a handful, rotated rarely); the
// cap only guards callers that pass ever-new secrets.
const KEY_CACHE_MAX = 64;
type MacKey = Uint8Array | import('node:crypto').KeyObject;
const keyCache = new Map<string, MacKey>();

/**
 * HMAC-SHA256 of `{prefix}{body}`: Node's (a key object, two updates, no
 * copy of the body) where the runtime has `node:crypto`, else over the joined
 * bytes. The prefix is `{id}.{timestamp}.`, ASCII.
 */
function mac(key: MacKey, prefix: string, body: Uint8Array): Uint8Array {
  if (nodeCrypto) {
    return nodeCrypto.createHmac('sha256', key).update(prefix, 'latin1').update(body).digest();
  }
  return hmacSha256(key as Uint8Array, concat(utf8(prefix), body));
}

function secretKey(secret: string): MacKey {
  let key = keyCache.get(secret);
  if (key === undefined) {
    let bytes: Uint8Array;
    try {
      bytes = fromBase64(secret.startsWith('whsec_') ? secret.slice(6) : secret);
    } catch {
      // Not base64 (the options refuse such secrets at start): a key nothing was signed with.
      bytes = utf8(secret);
    }
    key = nodeCrypto ? nodeCrypto.createSecretKey(bytes) : bytes;
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(secret, key);
  }
  return key;
}

/** One header value; repeated headers are refused rather than guessed between. */
function singleHeader(headers: WebhookHeaders, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length !== 1) {
      throw new WebhookVerificationError(INVALID_HEADERS, `Header ${name} is repeated`);
    }
    return checkValue(name, value[0]);
  }
  return checkValue(name, value);
}

// CR, LF and NUL are refused by the id and timestamp patterns and by the
// signature's own check in verifySignature, so they are not scanned for twice.
function checkValue(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new WebhookVerificationError(INVALID_HEADERS, `Header ${name} is malformed`);
  }
  return value;
}
