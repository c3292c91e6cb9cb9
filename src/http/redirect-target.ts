/**
 * The one normaliser for redirect targets taken from input (`return_to` and
 * anything an app forwards the same way). Untrusted text is decoded and
 * resolved the way a browser would (percent-decoding, repeated; dot segments;
 * backslashes; protocol-relative and absolute URLs) and only then checked,
 * so `/..//evil.example` or `/.%2e//evil.example` cannot survive as a
 * `//evil.example` path that a later relative redirect sends off-site.
 */

/** Longest target accepted; real in-app paths are far shorter. */
export const MAX_REDIRECT_TARGET_LENGTH = 1024;
/** Encoding layers looked through; anything encoded deeper is refused, not guessed at. */
const MAX_DECODE_ROUNDS = 3;
/** C0 and C1 controls and DEL: a browser strips or splits on them, so the text is not what we check. */
function hasControl(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

interface Resolved {
  /** Path (below the app's base path), query and fragment. */
  target: string;
}

/** One layer: resolved against the app as a browser would; null when it leaves the app. */
function resolveLayer(value: string, app: URL, basePath: string): Resolved | null {
  if (value === '' || hasControl(value)) return null;
  // Browsers treat `\` as `/` in http(s) URLs; so do we, before looking at the shape.
  const v = value.replaceAll('\\', '/');
  let url: URL;
  if (v.startsWith('/')) {
    // A protocol-relative `//host` is another origin; the URL parser below would say so too,
    // but refuse it by shape so no later join can revive it.
    if (v.startsWith('//')) return null;
    try {
      url = new URL(v, `${app.origin}/`);
    } catch {
      return null;
    }
  } else {
    // Only an absolute URL of the app itself; a bare `evil.example/x` or `javascript:` is not.
    try {
      url = new URL(v);
    } catch {
      return null;
    }
  }
  if (url.origin !== app.origin || url.username !== '' || url.password !== '') return null;
  let path = url.pathname;
  if (!v.startsWith('/')) {
    // An absolute URL must point below the app's base path; keep the part below it.
    if (basePath !== '') {
      if (path !== basePath && !path.startsWith(`${basePath}/`)) return null;
      path = path.slice(basePath.length) || '/';
    }
  }
  // After dot-segment removal `/..//x` is `//x`: a path that would read as a host.
  if (!path.startsWith('/') || path.startsWith('//')) return null;
  return { target: path + url.search + url.hash };
}

/**
 * Normalises a redirect target from input to a path inside the app (below its
 * base path), or null when it is malformed or could leave the app's origin
 * under any decoding. The result starts with exactly one `/`, has no
 * backslash, no control character, no dot segment, and normalising it again
 * returns it unchanged.
 *
 * @param input the untrusted value (e.g. the `return_to` query parameter)
 * @param appUrl the app's public URL (scheme, host and any base path)
 */
export function normalizeRedirectTarget(input: unknown, appUrl: string): string | null {
  if (typeof input !== 'string' || input.length === 0) return null;
  if (input.length > MAX_REDIRECT_TARGET_LENGTH) return null;
  const app = new URL(appUrl);
  const basePath = app.pathname.replace(/\/+$/, '');
  const first = resolveLayer(input, app, basePath);
  if (first === null) return null;
  // Every decoding of the input, and of what we would return, must stay inside the app:
  // an app (or a proxy) that decodes once more must not find another origin.
  for (const start of [input, first.target]) {
    let current = start;
    for (let round = 0; ; round++) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(current);
      } catch {
        // A stray `%` ends the decoding: this layer was already checked.
        break;
      }
      if (decoded === current) break;
      if (round >= MAX_DECODE_ROUNDS) return null;
      if (resolveLayer(decoded, app, basePath) === null) return null;
      current = decoded;
    }
  }
  if (first.target.length > MAX_REDIRECT_TARGET_LENGTH) return null;
  return first.target;
}
