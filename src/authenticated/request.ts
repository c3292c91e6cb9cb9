/**
 * What `authenticate()` reads of a request before deciding: page navigation or
 * fetch, inside the admin's iframe or not, a cross-site write, and query values
 * that count only when given once (a repeated key is refused as absent).
 */
import { isBearerRequest } from '../core/bearer.js';
import type { CoreRequest } from '../core/http.js';

/** A query parameter given exactly once, else undefined. */
export function singleQuery(req: CoreRequest, name: string): string | undefined {
  const all = req.queryAll(name);
  return all.length === 1 ? all[0] : undefined;
}

/** True for a top-level page load; false for fetch/XHR (which must not get a redirect). */
export function isPageNavigation(req: CoreRequest): boolean {
  if (req.header('x-requested-with')) return false;
  if (isBearerRequest(req.header('authorization'))) return false;
  const mode = req.header('sec-fetch-mode');
  if (mode) return mode === 'navigate';
  const accept = req.header('accept') ?? '';
  return req.method === 'GET' && /\btext\/html\b/i.test(accept);
}

/** A page load inside the admin's iframe (where the OAuth pages cannot load). */
export function isEmbeddedLoad(req: CoreRequest): boolean {
  return req.header('sec-fetch-dest') === 'iframe' || singleQuery(req, 'embedded') === '1';
}

/**
 * Whether the browser says this load is framed. The admin only ever frames the
 * app with a launch token; without Fetch Metadata (old browsers, non-browsers)
 * the token's signature, audience, age and single use still decide.
 */
export function isFramedOrUnknown(req: CoreRequest): boolean {
  const dest = req.header('sec-fetch-dest');
  return dest === undefined || dest === 'iframe' || dest === 'frame';
}

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request that only the session cookie authenticates was sent by
 * another site (CSRF). Fetch Metadata decides when the browser sends it;
 * otherwise the `Origin` header (an opaque `null` origin counts as foreign).
 * Same-site senders (the local admin on another port) pass, as do non-browser
 * clients that send neither header.
 */
export function isCrossSiteWrite(req: CoreRequest, appOrigin: string): boolean {
  if (SAFE_METHODS.has(req.method)) return false;
  const site = req.header('sec-fetch-site');
  if (site !== undefined) return site === 'cross-site';
  const origin = req.header('origin');
  return origin !== undefined && origin !== appOrigin;
}
