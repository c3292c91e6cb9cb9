/**
 * The kit's security-header set, decided once here for both shells: the kit's own
 * answers, app routes behind `kit.authenticated()` (Express) and app routes passed
 * through `kit.secureResponse(request, response)` (Fetch) get the same set.
 *
 * A document (a page, or anything a browser may render) gets the full set: a CSP
 * whose `frame-ancestors` names only the admin origin when embedded (`'none'` plus
 * `X-Frame-Options: DENY` otherwise), COOP, CORP, HSTS, nosniff, `Referrer-Policy`
 * and the rest of helmet's defaults. A request carrying `Authorization: Bearer` gets
 * only what protects a response read by script (nosniff, HSTS) plus
 * `Vary: Authorization`: browsers attach a bearer token only to requests their scripts
 * make, so document headers guard nothing there (docs/security.md).
 *
 * The values are helmet's defaults (`test/http/security-headers.test.ts` holds them
 * equal); `securityHeaders.helmet` options refine the set on the Express shell, which
 * then has helmet compute it (src/shells/express/security-headers.ts).
 */

/** A header name (lower case) and its value. */
export type HeaderEntry = readonly [name: string, value: string];

/** The set a response gets: `document` or `bearer` entries, and headers to remove. */
export interface HeaderSet {
  document: readonly HeaderEntry[];
  bearer: readonly HeaderEntry[];
  /** Headers a framework adds that say too much (`X-Powered-By`). */
  removed: readonly string[];
}

export interface HeaderSetOptions {
  embedded: { enabled: boolean; adminOrigin: string };
  /** `'unprotected'`: no `frame-ancestors`, no `X-Frame-Options` (the app's proxy sets them). */
  framing: 'protected' | 'unprotected';
  /** Whether the app is served over HTTPS (its URL): `upgrade-insecure-requests` only then. */
  https: boolean;
}

/** What a bearer response keeps of the document set. */
const BEARER_KEPT: ReadonlySet<string> = new Set([
  'x-content-type-options',
  'strict-transport-security',
]);

/** Where the app may be framed: the admin origin when embedded, else nowhere. */
export function frameAncestors(embedded: HeaderSetOptions['embedded']): string[] {
  return embedded.enabled ? [embedded.adminOrigin] : ["'none'"];
}

/** The kit's Content-Security-Policy for documents (helmet's defaults, the kit's framing). */
function documentCsp(o: HeaderSetOptions): string {
  const protect = o.framing !== 'unprotected';
  return [
    "default-src 'self'",
    "base-uri 'self'",
    "font-src 'self' https: data:",
    "form-action 'self'",
    ...(protect ? [`frame-ancestors ${frameAncestors(o.embedded).join(' ')}`] : []),
    "img-src 'self' data:",
    "object-src 'none'",
    "script-src 'self'",
    "script-src-attr 'none'",
    "style-src 'self' https: 'unsafe-inline'",
    // On a plain-HTTP development URL the browser would rewrite the app's own assets to https.
    ...(o.https ? ['upgrade-insecure-requests'] : []),
  ].join(';');
}

/** The kit's header set under these options. */
export function kitHeaderSet(o: HeaderSetOptions): HeaderSet {
  const denyFraming = o.framing !== 'unprotected' && !o.embedded.enabled;
  const document: HeaderEntry[] = [
    ['content-security-policy', documentCsp(o)],
    ['cross-origin-opener-policy', 'same-origin'],
    ['cross-origin-resource-policy', 'same-origin'],
    ['origin-agent-cluster', '?1'],
    ['referrer-policy', 'no-referrer'],
    ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
    ['x-content-type-options', 'nosniff'],
    ['x-dns-prefetch-control', 'off'],
    ['x-download-options', 'noopen'],
    // X-Frame-Options has no "allow this origin": when embedded it must be absent.
    ...(denyFraming ? [['x-frame-options', 'DENY'] as const] : []),
    ['x-permitted-cross-domain-policies', 'none'],
    ['x-xss-protection', '0'],
  ];
  return {
    document,
    bearer: document.filter(([name]) => BEARER_KEPT.has(name)),
    removed: ['x-powered-by'],
  };
}

/**
 * Why the app can be framed by any site under these options, or null when it
 * cannot. The kit logs it as a warning at start.
 */
export function framingWarning(
  enabled: boolean,
  framing: 'protected' | 'unprotected',
): string | null {
  if (!enabled) {
    return 'securityHeaders.enabled is false: no frame-ancestors and no X-Frame-Options are sent, so any site can frame the app (clickjacking). Set your own framing headers.';
  }
  if (framing === 'unprotected') {
    return "securityHeaders.framing is 'unprotected': no frame-ancestors and no X-Frame-Options are sent, so any site can frame the app (clickjacking).";
  }
  return null;
}

/**
 * The frame-ancestors a kit page carries in its own CSP: what the security headers
 * would send, or undefined when the app sends its own (none from us).
 */
export function pageFrameAncestors(config: {
  embedded: HeaderSetOptions['embedded'];
  securityHeaders: { enabled: boolean; framing: 'protected' | 'unprotected' };
}): string[] | undefined {
  if (!config.securityHeaders.enabled || config.securityHeaders.framing === 'unprotected') {
    return undefined;
  }
  return frameAncestors(config.embedded);
}

/** The header operations `applyHeaderSet` needs (a `Headers`, or a shell's adapter). */
export interface HeaderTarget {
  has(name: string): boolean;
  get(name: string): string | null | undefined;
  set(name: string, value: string): void;
  delete(name: string): void;
}

/**
 * Applies `set` to a response's headers without dropping the app's own: a header
 * the response already carries is kept (as on Express, where a route's own
 * `res.setHeader` comes after the kit's), `Vary: Authorization` is added to what the
 * response varies on.
 */
export function applyHeaderSet(target: HeaderTarget, set: HeaderSet, bearer: boolean): void {
  for (const [name, value] of bearer ? set.bearer : set.document) {
    if (!target.has(name)) target.set(name, value);
  }
  for (const name of set.removed) target.delete(name);
  if (bearer) target.set('vary', varyWith(target.get('vary'), 'Authorization'));
}

/** A `Vary` value that also names `field` (unchanged when it does, or is `*`). */
export function varyWith(current: string | null | undefined, field: string): string {
  if (current === null || current === undefined || current.trim() === '') return field;
  const fields = current.split(',').map((f) => f.trim().toLowerCase());
  if (fields.includes('*') || fields.includes(field.toLowerCase())) return current;
  return `${current}, ${field}`;
}
