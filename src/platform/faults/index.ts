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
import * as v from 'valibot';
import { boolean, integer } from '../../options/index.js';
import { parsePlatformOptions } from '../schema.js';

/** Which requests a fault rule applies to. */
export type FaultRoute = 'api' | 'token' | 'authorize' | 'session';

export const FAULT_ROUTES: readonly FaultRoute[] = ['api', 'token', 'authorize', 'session'];

const SHARE = 'must be a number from 0 to 1 (the share of requests it applies to).';
const share = v.pipe(
  v.number(SHARE),
  v.check((n) => Number.isFinite(n) && n >= 0 && n <= 1, SHARE),
);
// 10 minutes: beyond that a test meant `tokenTimeout`.
const MS =
  'must be a number of milliseconds from 0 to 600000 (for a token endpoint that never answers, set tokenTimeout).';
const milliseconds = v.pipe(
  v.number(MS),
  v.check((n) => Number.isFinite(n) && n >= 0 && n <= 600_000, MS),
);

/** Faults for one route group. Shares are probabilities in [0, 1], drawn per request. */
export const faultRuleSchema = v.strictObject({
  /** Added delay before the request reaches its route, in ms. @default 0 */
  latencyMs: v.optional(milliseconds, 0),
  /** Extra random delay in [0, jitterMs) added to `latencyMs`. @default 0 */
  jitterMs: v.optional(milliseconds, 0),
  /** Share of requests answered with `errorStatus` instead of reaching the route. @default 0 */
  errorRate: v.optional(share, 0),
  /** Status of injected errors (500..599). @default 503 */
  errorStatus: v.optional(integer(500, 599), 503),
  /**
   * Share of requests whose connection is destroyed mid-response: the route
   * runs (its side effects happen) but the client gets the headers and at
   * most half the body, then a reset. @default 0
   */
  resetRate: v.optional(share, 0),
  /** Share of requests answered 429 with `Retry-After` (a 429 storm at 1). @default 0 */
  rateLimitRate: v.optional(share, 0),
  /** `Retry-After` of injected 429s, in seconds. @default 1 */
  retryAfterSeconds: v.optional(integer(0, 86_400), 1),
  /**
   * Apply this rule to the next `count` requests of the group only, then
   * heal (e.g. `{ resetRate: 1, count: 1 }`: exactly one lost answer).
   * @default undefined (every request)
   */
  count: v.optional(integer(1, 1_000_000)),
});

/** `startPlatform({ faults })` and `platform.setFaults(faults)`. */
export const faultOptionsSchema = v.strictObject({
  /** Seed of the generator behind every share. @default 1 */
  seed: v.optional(integer(0, 2 ** 32 - 1), 1),
  /** Requests to `/api/v1/*`. @default undefined (no faults) */
  api: v.optional(faultRuleSchema),
  /** `POST /oauth/token`. @default undefined (no faults) */
  token: v.optional(faultRuleSchema),
  /** `GET /oauth/authorize` and the consent decision. @default undefined (no faults) */
  authorize: v.optional(faultRuleSchema),
  /** `GET /oauth/session`. @default undefined (no faults) */
  session: v.optional(faultRuleSchema),
  /**
   * The token endpoint never answers: requests are held open until the
   * client gives up (or the platform closes). @default false
   */
  tokenTimeout: v.optional(boolean(), false),
  /**
   * Send each webhook attempt this many times at once (same `webhook-id`,
   * same signature), for dedupe tests. The attempt succeeds if any copy got
   * a 2xx. @default 1
   */
  webhookDuplicate: v.optional(integer(1, 20), 1),
  /**
   * Share of webhook attempts that are never sent; each is logged as a
   * failed attempt (`error: 'dropped by fault injection'`) and retried on
   * the schedule like a lost request. @default 0
   */
  webhookDropRate: v.optional(share, 0),
});

/** Faults for one route group (see `faultRuleSchema` for each field and its default). */
export type FaultRule = v.InferInput<typeof faultRuleSchema>;
/** `startPlatform({ faults })` and `platform.setFaults(faults)`. */
export type FaultOptions = v.InferInput<typeof faultOptionsSchema>;
export type ResolvedFaultRule = v.InferOutput<typeof faultRuleSchema>;

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

export const NO_FAULTS: ResolvedFaults = {
  seed: 1,
  routes: {},
  tokenTimeout: false,
  webhookDuplicate: 1,
  webhookDropRate: 0,
};

/** Reshapes validated fault options: one rule per route group that has one. */
export function toResolvedFaults(parsed: v.InferOutput<typeof faultOptionsSchema>): ResolvedFaults {
  const routes: Partial<Record<FaultRoute, ResolvedFaultRule>> = {};
  for (const route of FAULT_ROUTES) {
    const rule = parsed[route];
    if (rule !== undefined) routes[route] = rule;
  }
  return {
    seed: parsed.seed,
    routes,
    tokenTimeout: parsed.tokenTimeout,
    webhookDuplicate: parsed.webhookDuplicate,
    webhookDropRate: parsed.webhookDropRate,
  };
}

/**
 * The one place fault options given at run time (`setFaults`) are validated
 * and defaulted. Throws `PLATFORM_INVALID_OPTIONS` naming each `faults.…` setting.
 */
export function resolveFaults(options: FaultOptions | undefined): ResolvedFaults {
  if (options === undefined) return NO_FAULTS;
  return toResolvedFaults(
    parsePlatformOptions(faultOptionsSchema, options, 'setFaults', { prefix: 'faults' }),
  );
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
