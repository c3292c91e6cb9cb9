/**
 * Shared pieces of the bad-input sweeps: a raw HTTP sender (bytes the URL
 * parser of fetch would normalise away reach the server as sent), input
 * generators, and the "no secret in the response" check.
 */
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { expect } from 'vitest';

/** Generated inputs per entry point: 200 in `npm test`, `FUZZ_RUNS` in `npm run test:long`. */
export const RUNS = (() => {
  const raw = process.env['FUZZ_RUNS'];
  const n = raw === undefined ? 200 : Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error('FUZZ_RUNS must be a positive integer');
  return n;
})();

/** Per-test timeout: the default 30 s is too short for the long sweeps. */
export const SWEEP_TIMEOUT_MS = Math.max(30_000, RUNS * 30);

/** fast-check settings: a new seed each run (printed on failure); FUZZ_SEED replays one. */
export function fcParams(): fc.Parameters<unknown> {
  const seed = process.env['FUZZ_SEED'];
  return {
    numRuns: RUNS,
    endOnFailure: true,
    ...(seed === undefined ? {} : { seed: Number(seed) }),
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Node refuses only bytes outside 0x21..0xff in a request path: escape just those. */
export function rawPath(path: string): string {
  return path.replace(/[^\u0021-\u00ff]/gu, (c) => encodeURIComponent(c));
}

/**
 * Header values Node can send (no CR, LF or other controls), at most 4,000
 * characters: past Node's 16 KB header limit the HTTP parser itself answers
 * 431 and drops the connection before any app code runs.
 */
export function headerSafe(value: string): string {
  return value.replace(/[^\t\u0020-\u007e\u0080-\u00ff]/gu, '').slice(0, 4000);
}

export function send(
  origin: string,
  input: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  },
): Promise<RawResponse> {
  const url = new URL(origin);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers ?? {})) headers[k] = headerSafe(v);
  // Framed explicitly: Node sends a GET body unframed, which the server would
  // read as a second, garbage request.
  if (input.body !== undefined) headers['content-length'] = String(Buffer.byteLength(input.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: input.method ?? 'GET',
        path: rawPath(input.path.startsWith('/') ? input.path : `/${input.path}`),
        headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (input.body !== undefined) req.write(input.body);
    req.end();
  });
}

export function closeAgent(): void {
  agent.destroy();
}

/** Fails if any secret appears in the status line's headers or the body. */
export function expectNoSecret(res: RawResponse, secrets: readonly string[]): void {
  const text = `${JSON.stringify(res.headers)}\n${res.body}`;
  for (const s of secrets) {
    if (s.length < 8) throw new Error('a secret to scan for must be at least 8 characters');
    expect(text.includes(s), 'a secret appeared in a response').toBe(false);
  }
}

export function expectNo5xx(res: RawResponse, what: string): void {
  expect(res.status, `${what} answered ${res.status}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
}

/** Strings an attacker or a broken client sends: empty, unicode, overlong, escapes, injections. */
export function nasty(extra: readonly string[] = []): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.uuid(),
    fc.constantFrom(
      '',
      '%',
      '%zz',
      '%00',
      '%c0%af',
      '\u0000',
      '../../etc/passwd',
      '<script>alert(1)</script>',
      "' or 1=1 --",
      'null',
      'undefined',
      '[]',
      '{}',
      '__proto__',
      'constructor',
      'true',
      '-1',
      '1e309',
      'NaN',
      'https://evil.example',
      '//evil.example',
      ...extra,
    ),
    fc.integer({ min: 100, max: 20_000 }).map((n) => 'a'.repeat(n)),
    fc.base64String({ maxLength: 120 }),
  );
}

/** A query string of repeated, odd and overlong parameters, percent-encoded or raw. */
export function queryString(
  keys: readonly string[],
  values: fc.Arbitrary<string>,
): fc.Arbitrary<string> {
  const key = fc.oneof(
    fc.constantFrom(...keys),
    fc.string({ maxLength: 12 }),
    fc.constant('__proto__'),
  );
  const pair = fc.tuple(key, values, fc.boolean());
  return fc
    .array(pair, { maxLength: 8 })
    .map((pairs) =>
      pairs
        .map(([k, v, encode]) =>
          encode ? `${encodeURIComponent(k)}=${encodeURIComponent(v)}` : `${k}=${v}`,
        )
        .join('&'),
    );
}

/**
 * A real credential made wrong: truncated, extended, or with garbage in front
 * (never whitespace in front: `Bearer  <token>` with two spaces is still the
 * real token, as RFC 7235 allows).
 */
export function mangled(real: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc
      .integer({ min: 1, max: Math.max(1, real.length - 1) })
      .map((n) => real.slice(0, real.length - n)),
    fc.string({ minLength: 1, maxLength: 8 }).map((s) => `${s.replace(/\s/gu, '_')}${real}`),
    fc.string({ minLength: 1, maxLength: 8 }).map((s) => `${real.slice(0, -1)}.${s}`),
  );
}
