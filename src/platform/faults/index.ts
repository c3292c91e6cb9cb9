/**
 * Fault injection for the local platform: latency, 5xx, connection resets,
 * 429 storms, a hanging token endpoint, and dropped or duplicated webhook
 * deliveries. Applied as middleware in front of the real routes (and as a
 * hook in the webhook dispatcher), so no handler knows about faults.
 *
 * Every random choice comes from one seeded generator: a test that sets
 * `seed` sees the same faults on every run for the same request order.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { PLATFORM_INVALID_OPTIONS, PlatformError } from '../errors.js';

/** Which requests a fault rule applies to. */
export type FaultRoute = 'api' | 'token' | 'authorize' | 'session';

export const FAULT_ROUTES: readonly FaultRoute[] = ['api', 'token', 'authorize', 'session'];

/** Faults for one route group. Shares are probabilities in [0, 1], drawn per request. */
export interface FaultRule {
  /** Added delay before the request reaches its route, in ms. @default 0 */
  latencyMs?: number;
  /** Extra random delay in [0, jitterMs) added to `latencyMs`. @default 0 */
  jitterMs?: number;
  /** Share of requests answered with `errorStatus` instead of reaching the route. @default 0 */
  errorRate?: number;
  /** Status of injected errors (500..599). @default 503 */
  errorStatus?: number;
  /**
   * Share of requests whose connection is destroyed mid-response: the route
   * runs (its side effects happen) but the client gets the headers and at
   * most half the body, then a reset. @default 0
   */
  resetRate?: number;
  /** Share of requests answered 429 with `Retry-After` (a 429 storm at 1). @default 0 */
  rateLimitRate?: number;
  /** `Retry-After` of injected 429s, in seconds. @default 1 */
  retryAfterSeconds?: number;
  /**
   * Apply this rule to the next `count` requests of the group only, then
   * heal (e.g. `{ resetRate: 1, count: 1 }`: exactly one lost answer).
   * @default undefined (every request)
   */
  count?: number;
}

/** `startPlatform({ faults })` and `platform.setFaults(faults)`. */
export interface FaultOptions {
  /** Seed of the generator behind every share. @default 1 */
  seed?: number;
  /** Requests to `/api/v1/*`. @default undefined (no faults) */
  api?: FaultRule;
  /** `POST /oauth/token`. @default undefined (no faults) */
  token?: FaultRule;
  /** `GET /oauth/authorize` and the consent decision. @default undefined (no faults) */
  authorize?: FaultRule;
  /** `GET /oauth/session`. @default undefined (no faults) */
  session?: FaultRule;
  /**
   * The token endpoint never answers: requests are held open until the
   * client gives up (or the platform closes). @default false
   */
  tokenTimeout?: boolean;
  /**
   * Send each webhook attempt this many times at once (same `webhook-id`,
   * same signature), for dedupe tests. The attempt succeeds if any copy got
   * a 2xx. @default 1
   */
  webhookDuplicate?: number;
  /**
   * Share of webhook attempts that are never sent; each is logged as a
   * failed attempt (`error: 'dropped by fault injection'`) and retried on
   * the schedule like a lost request. @default 0
   */
  webhookDropRate?: number;
}

export interface ResolvedFaultRule {
  latencyMs: number;
  jitterMs: number;
  errorRate: number;
  errorStatus: number;
  resetRate: number;
  rateLimitRate: number;
  retryAfterSeconds: number;
  count: number | undefined;
}

export interface ResolvedFaults {
  seed: number;
  routes: Partial<Record<FaultRoute, ResolvedFaultRule>>;
  tokenTimeout: boolean;
  webhookDuplicate: number;
  webhookDropRate: number;
}

/** How many faults were injected since start (for assertions and figures). */
export interface FaultCounts {
  delayed: number;
  errors: number;
  resets: number;
  rateLimited: number;
  hung: number;
  webhookDropped: number;
  webhookDuplicated: number;
}

const DEFAULT_RULE: ResolvedFaultRule = {
  latencyMs: 0,
  jitterMs: 0,
  errorRate: 0,
  errorStatus: 503,
  resetRate: 0,
  rateLimitRate: 0,
  retryAfterSeconds: 1,
  count: undefined,
};

export const NO_FAULTS: ResolvedFaults = {
  seed: 1,
  routes: {},
  tokenTimeout: false,
  webhookDuplicate: 1,
  webhookDropRate: 0,
};

function fail(setting: string, message: string): never {
  throw new PlatformError(PLATFORM_INVALID_OPTIONS, `faults.${setting} ${message}`);
}

function share(setting: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    fail(setting, 'must be a number between 0 and 1');
  }
  return value;
}

function milliseconds(setting: string, value: unknown): number {
  // 10 minutes: beyond that a test meant `tokenTimeout`.
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 600_000) {
    fail(setting, 'must be a number of ms between 0 and 600000');
  }
  return value;
}

function integer(setting: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(setting, `must be an integer between ${min} and ${max}`);
  }
  return value;
}

function resolveRule(route: FaultRoute, value: unknown): ResolvedFaultRule {
  if (typeof value !== 'object' || value === null) fail(route, 'must be an object');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) {
    if (!(key in DEFAULT_RULE)) fail(`${route}.${key}`, 'is not a fault option');
  }
  const d = DEFAULT_RULE;
  return {
    latencyMs: milliseconds(`${route}.latencyMs`, v['latencyMs'] ?? d.latencyMs),
    jitterMs: milliseconds(`${route}.jitterMs`, v['jitterMs'] ?? d.jitterMs),
    errorRate: share(`${route}.errorRate`, v['errorRate'] ?? d.errorRate),
    errorStatus: integer(`${route}.errorStatus`, v['errorStatus'] ?? d.errorStatus, 500, 599),
    resetRate: share(`${route}.resetRate`, v['resetRate'] ?? d.resetRate),
    rateLimitRate: share(`${route}.rateLimitRate`, v['rateLimitRate'] ?? d.rateLimitRate),
    retryAfterSeconds: integer(
      `${route}.retryAfterSeconds`,
      v['retryAfterSeconds'] ?? d.retryAfterSeconds,
      0,
      86_400,
    ),
    count:
      v['count'] === undefined ? undefined : integer(`${route}.count`, v['count'], 1, 1_000_000),
  };
}

/** The one place fault options are validated and defaulted. Throws `PLATFORM_INVALID_OPTIONS`. */
export function resolveFaults(options: FaultOptions | undefined): ResolvedFaults {
  if (options === undefined) return NO_FAULTS;
  if (typeof options !== 'object' || options === null) fail('', 'must be an object');
  const known = new Set<string>([
    ...FAULT_ROUTES,
    'seed',
    'tokenTimeout',
    'webhookDuplicate',
    'webhookDropRate',
  ]);
  for (const key of Object.keys(options)) if (!known.has(key)) fail(key, 'is not a fault option');
  const routes: Partial<Record<FaultRoute, ResolvedFaultRule>> = {};
  for (const route of FAULT_ROUTES) {
    if (options[route] !== undefined) routes[route] = resolveRule(route, options[route]);
  }
  const tokenTimeout = options.tokenTimeout ?? NO_FAULTS.tokenTimeout;
  if (typeof tokenTimeout !== 'boolean') fail('tokenTimeout', 'must be a boolean');
  return {
    seed: integer('seed', options.seed ?? NO_FAULTS.seed, 0, 2 ** 32 - 1),
    routes,
    tokenTimeout,
    webhookDuplicate: integer(
      'webhookDuplicate',
      options.webhookDuplicate ?? NO_FAULTS.webhookDuplicate,
      1,
      20,
    ),
    webhookDropRate: share('webhookDropRate', options.webhookDropRate ?? NO_FAULTS.webhookDropRate),
  };
}

/** mulberry32: tiny, fast and good enough to pick which requests fail. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function routeOf(path: string, method: string): FaultRoute | undefined {
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return 'api';
  if (path === '/oauth/token' && method === 'POST') return 'token';
  if (path === '/oauth/authorize' || path === '/oauth/authorize/decision') return 'authorize';
  if (path === '/oauth/session') return 'session';
  return undefined;
}

export interface FaultInjector {
  /** Replaces every fault (undefined or `{}` heals the platform) and reseeds. */
  set(options: FaultOptions | undefined): void;
  current(): ResolvedFaults;
  middleware: RequestHandler;
  /** Webhook hook: how many copies of this attempt to send (0 = dropped). */
  webhookCopies(): number;
  counts(): FaultCounts;
  /** Destroys requests held by `tokenTimeout`. */
  close(): void;
}

export function createFaultInjector(initial: ResolvedFaults): FaultInjector {
  let faults = initial;
  let random = seeded(faults.seed);
  const held = new Set<Response>();
  /** Requests seen per group since the last `set`, for `count`. */
  const matched = new Map<FaultRoute, number>();
  const timers = new Set<NodeJS.Timeout>();
  const counts: FaultCounts = {
    delayed: 0,
    errors: 0,
    resets: 0,
    rateLimited: 0,
    hung: 0,
    webhookDropped: 0,
    webhookDuplicated: 0,
  };

  function delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  }

  function resetMidResponse(res: Response): void {
    // Mid-response on purpose: the route's side effects have happened and the
    // headers are out, but the body is cut, as when a proxy or NIC dies.
    res.end = function faultyEnd(this: Response, ...args: unknown[]): Response {
      const [chunk, encoding] = args;
      let body: Buffer = Buffer.alloc(0);
      if (typeof chunk === 'string') {
        body = Buffer.from(
          chunk,
          typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8',
        );
      } else if (chunk instanceof Uint8Array) {
        body = Buffer.from(chunk);
      }
      counts.resets += 1;
      if (body.length > 1) res.write(body.subarray(0, Math.floor(body.length / 2)));
      else res.flushHeaders();
      res.socket?.destroy();
      return res;
    } as Response['end'];
  }

  async function inject(req: Request, res: Response, next: NextFunction): Promise<void> {
    const route = routeOf(req.path, req.method);
    if (route === undefined) return next();
    if (route === 'token' && faults.tokenTimeout) {
      counts.hung += 1;
      held.add(res);
      res.once('close', () => held.delete(res));
      return;
    }
    const rule = faults.routes[route];
    if (!rule) return next();
    if (rule.count !== undefined) {
      const seen = (matched.get(route) ?? 0) + 1;
      matched.set(route, seen);
      if (seen > rule.count) return next();
    }
    const wait = rule.latencyMs + (rule.jitterMs > 0 ? random() * rule.jitterMs : 0);
    if (wait > 0) {
      counts.delayed += 1;
      await delay(wait);
      if (res.destroyed || res.writableEnded) return;
    }
    if (rule.rateLimitRate > 0 && random() < rule.rateLimitRate) {
      counts.rateLimited += 1;
      res
        .status(429)
        .set('Retry-After', String(rule.retryAfterSeconds))
        .json(
          route === 'api'
            ? { error: 'Rate limit exceeded (injected fault)', code: 'rate_limited', details: [] }
            : { error: 'temporarily_unavailable', error_description: 'Too many requests.' },
        );
      return;
    }
    if (rule.errorRate > 0 && random() < rule.errorRate) {
      counts.errors += 1;
      res
        .status(rule.errorStatus)
        .json(
          route === 'api'
            ? { error: 'Injected fault', code: 'INTERNAL_ERROR', details: [] }
            : { error: 'server_error', error_description: 'Injected fault.' },
        );
      return;
    }
    if (rule.resetRate > 0 && random() < rule.resetRate) resetMidResponse(res);
    next();
  }

  return {
    set(options) {
      faults = resolveFaults(options);
      random = seeded(faults.seed);
      matched.clear();
    },
    current: () => faults,
    middleware: function faultInjection(req: Request, res: Response, next: NextFunction) {
      inject(req, res, next).catch(next);
    },
    webhookCopies() {
      if (faults.webhookDropRate > 0 && random() < faults.webhookDropRate) {
        counts.webhookDropped += 1;
        return 0;
      }
      if (faults.webhookDuplicate > 1) counts.webhookDuplicated += faults.webhookDuplicate - 1;
      return faults.webhookDuplicate;
    },
    counts: () => ({ ...counts }),
    close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const res of held) res.socket?.destroy();
      held.clear();
    },
  };
}
