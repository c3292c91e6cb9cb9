/**
 * The guard in front of /api/v1: bearer token, X-Store-Id, store match,
 * expiry and revocation, then the per app-and-store rate limit. Every response
 * below it carries the X-RateLimit-* headers, errors included.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { AppRegistry } from '../apps.js';
import { type RateLimit, TIER_LIMITS } from '../options.js';
import type { RateLimiter } from '../ratelimit/index.js';
import { bearerToken, sendBearerError } from './responses.js';
import type { TokenService } from './tokens.js';

export interface GuardDeps {
  tokens: TokenService;
  apps: AppRegistry;
  limiter: RateLimiter;
  /** Global override from `startPlatform({ rateLimit })`. */
  rateLimit: Partial<RateLimit> | undefined;
}

export function createApiGuard(deps: GuardDeps): RequestHandler {
  const { tokens, apps, limiter } = deps;
  const anonymousLimit: RateLimit = { ...TIER_LIMITS.community, ...deps.rateLimit };

  function limitFor(appId: string): RateLimit {
    const app = apps.byId(appId);
    const tier = TIER_LIMITS[app?.tier ?? 'community'];
    return { ...tier, ...deps.rateLimit, ...app?.rateLimit };
  }

  function headers(res: Response, v: { limit: number; remaining: number; reset: number }): void {
    res.setHeader('X-RateLimit-Limit', String(v.limit));
    res.setHeader('X-RateLimit-Remaining', String(v.remaining));
    res.setHeader('X-RateLimit-Reset', String(v.reset));
  }

  return function apiGuard(req: Request, res: Response, next: NextFunction) {
    const token = bearerToken(req.get('authorization'));
    const check = token === undefined ? undefined : tokens.checkAccessToken(token);
    if (!check?.ok) {
      const known = check?.token;
      headers(
        res,
        known
          ? limiter.peek(`${known.appId}:${known.storeId}`, limitFor(known.appId))
          : limiter.peek(undefined, anonymousLimit),
      );
      sendBearerError(res, check?.code ?? 'invalid_token');
      return;
    }
    const info = check.token;
    const key = `${info.appId}:${info.storeId}`;
    const limit = limitFor(info.appId);
    const storeHeader = req.get('x-store-id');
    if (storeHeader === undefined || storeHeader === '') {
      headers(res, limiter.peek(key, limit));
      sendBearerError(res, 'missing_store_id');
      return;
    }
    if (storeHeader !== info.storeId) {
      headers(res, limiter.peek(key, limit));
      sendBearerError(res, 'store_mismatch');
      return;
    }
    const admission = limiter.admit(key, limit);
    headers(res, admission);
    if (!admission.ok) {
      res.setHeader('Retry-After', String(admission.retryAfter));
      res.status(429).json({
        error: 'Rate limit exceeded; retry after the number of seconds in Retry-After.',
        code: 'rate_limited',
        details: [],
      });
      return;
    }
    res.once('finish', admission.release);
    res.once('close', admission.release);
    res.locals.platformAuth = {
      appId: info.appId,
      clientId: info.clientId,
      storeId: info.storeId,
      scopes: info.scopes,
    };
    next();
  };
}
