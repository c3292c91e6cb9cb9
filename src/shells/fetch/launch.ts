/**
 * Where the Fetch shell sends the admin's launch: a `Response` cannot hand the
 * app's route a cookie to set, so the launch answers a redirect carrying the
 * new session cookie to the same URL without the launch token. The token, used
 * once, stays out of the browser's history and of the page's `Referer`.
 */
import type { CoreResponse } from '../../core/http.js';

/**
 * The redirect after a launch: same path and query, minus every `param`. The
 * Location is a path on this origin: leading slashes and backslashes collapse
 * to one, so a request for `//evil.example/` cannot redirect off-site.
 */
export function launchRedirect(request: Request, param: string): CoreResponse {
  const url = new URL(request.url);
  url.searchParams.delete(param);
  const path = `/${url.pathname.replace(/^[/\\]+/, '')}`;
  const method = request.method.toUpperCase();
  return {
    // 303 turns anything but a page load into a GET of the page (the admin only loads pages).
    status: method === 'GET' || method === 'HEAD' ? 302 : 303,
    headers: { location: `${path}${url.search}`, 'cache-control': 'no-store' },
    cookies: [],
    body: { kind: 'empty' },
  };
}
