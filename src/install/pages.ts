/**
 * The few HTML pages the install routes answer with. Everything interpolated
 * is escaped; no page ever shows a code, state, token or secret.
 */

import type { CoreResponse } from '../core/http.js';
import { randomBytes, toBase64 } from '../crypto/primitives.js';

export function escapeHtml(s: string): string {
  // Enough for text and double-quoted attributes, the only places values go.
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export interface PageInput {
  status: number;
  /** Stable machine code, also sent as the `X-Store-App-Error` header. */
  code: string;
  title: string;
  message: string;
  /** Optional "try again" link (absolute URL or app-relative path). */
  retryUrl?: string | null;
  retryLabel?: string;
}

// One stylesheet for every page of the kit, allowed by a per-response nonce:
// the host app's CSP may forbid inline styles, and a page that renders as bare
// text looks broken to a merchant at exactly the wrong moment.
const STYLE = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0; min-height: 100vh; display: flex; align-items: flex-start; justify-content: center;
  background: #f6f6f7; color: #202223; line-height: 1.5; }
main { box-sizing: border-box; width: 100%; max-width: 34rem; margin: 4rem 1rem; padding: 1.5rem;
  background: #fff; border-radius: 12px; box-shadow: 0 1px 3px rgba(0,0,0,.12); border-top: 4px solid #b98900; }
main.error { border-top-color: #d72c0d; }
h1 { font-size: 1.25rem; margin: 0 0 .5rem; }
p { margin: 0 0 1rem; overflow-wrap: anywhere; }
a.button { display: inline-block; padding: .55rem 1rem; border-radius: 8px; background: #008060; color: #fff;
  font-weight: 600; text-decoration: none; }
a.button:hover { background: #006e52; }
a.button:focus-visible { outline: 3px solid #2c6ecb; outline-offset: 2px; }
.code { margin: 1rem 0 0; color: #616a75; font-size: .8125rem; }
`;

/**
 * A Content-Security-Policy for a kit page: nothing but its own nonce-bearing
 * stylesheet (and script, when it has one), keeping the app's frame-ancestors
 * so the page may show where the app may.
 */
function pageCsp(nonce: string, script: boolean, ancestors: string | undefined): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    ...(script ? [`script-src 'nonce-${nonce}'`] : []),
    "base-uri 'none'",
    "form-action 'none'",
    ...(ancestors ? [ancestors] : []),
  ].join('; ');
}

function layout(title: string, body: string, nonce: string, tone: 'error' | 'info'): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body>
<main class="${tone}">
${body}
</main>
</body>
</html>
`;
}

/** The `frame-ancestors` directive for these sources (undefined: none). */
export function ancestorsDirective(
  frameAncestors: readonly string[] | undefined,
): string | undefined {
  return frameAncestors ? `frame-ancestors ${frameAncestors.join(' ')}` : undefined;
}

function htmlResponse(
  status: number,
  html: string,
  csp: string,
  extra: Record<string, string> = {},
): CoreResponse {
  return {
    status,
    headers: { 'cache-control': 'no-store', ...extra, 'content-security-policy': csp },
    cookies: [],
    body: { kind: 'html', value: html },
  };
}

/**
 * One of the kit's pages (install failed, installation expired, platform or
 * database unavailable…): status, `X-Store-App-Error: code`, no caching, and only
 * the title, message and retry link given — never a stack, token or secret.
 * `frameAncestors`: where the page may be framed (undefined: no directive).
 */
export function pageResponse(page: PageInput, frameAncestors?: readonly string[]): CoreResponse {
  return renderPage(page, ancestorsDirective(frameAncestors));
}

/** `pageResponse` with the `frame-ancestors` directive as a string (undefined: none). */
export function renderPage(page: PageInput, ancestors: string | undefined): CoreResponse {
  const nonce = toBase64(randomBytes(16));
  const retry = page.retryUrl
    ? `<p><a class="button" href="${escapeHtml(page.retryUrl)}" target="_top">${escapeHtml(page.retryLabel ?? 'Try again')}</a></p>`
    : '';
  const body = `<h1>${escapeHtml(page.title)}</h1>
<p>${escapeHtml(page.message)}</p>
${retry}<p class="code">Error code: <code>${escapeHtml(page.code)}</code></p>`;
  return htmlResponse(
    page.status,
    layout(page.title, body, nonce, page.status >= 400 ? 'error' : 'info'),
    pageCsp(nonce, false, ancestors),
    { 'x-store-app-error': page.code },
  );
}

/**
 * Leaves the admin iframe: the authorize page must open at top level, where
 * the SameSite=Lax binding cookie is first-party (a partitioned iframe cookie
 * would be invisible to the top-level callback). The link is the fallback
 * when scripts are blocked or the frame may not navigate its parent.
 */
export function breakoutResponse(topUrl: string, frameAncestors: readonly string[]): CoreResponse {
  const nonce = toBase64(randomBytes(16));
  const url = escapeHtml(topUrl);
  const body = `<h1>Continue to install</h1>
<p>The installation continues in the full window.</p>
<p><a class="button" id="go" href="${url}" target="_top">Continue</a></p>
<script nonce="${nonce}">(function () { var u = document.getElementById('go').href; try { window.top.location.href = u; } catch (e) { /* the link stays */ } })();</script>`;
  return htmlResponse(
    200,
    layout('Continue to install', body, nonce, 'info'),
    pageCsp(nonce, true, ancestorsDirective(frameAncestors)),
  );
}

/** What the merchant is told on the re-authorisation page, by the reason's code. */
const REAUTHORIZE_REASONS: Record<string, { title: string; message: string }> = {
  NOT_INSTALLED: {
    title: 'Install the app to continue',
    message:
      'This app is not installed in this store, or it was uninstalled. Installing it again takes you to the store to approve its access.',
  },
  SCOPES_CHANGED: {
    title: 'The app needs new permissions',
    message:
      'This app now needs access you have not granted yet. Review and approve the new permissions in the store to continue.',
  },
  REAUTHORIZATION_REQUIRED: {
    title: 'Authorise the app again',
    message:
      "The store no longer accepts this app's access (it was revoked or has run out). Authorise the app again in the store to continue; nothing was lost.",
  },
  SESSION_REQUIRED: {
    title: 'Sign in to the app again',
    message:
      'Your session with this app has ended or belongs to another store. Continue to sign in again through the store.',
  },
};

/**
 * The page an embedded app answers when it cannot act for the store: styled
 * like the kit's other pages, it says why (`code`: not installed, scopes
 * changed, access revoked, no session) and leaves the admin iframe in one
 * click, since the authorize page refuses framing. It also tries to leave by
 * script, which browsers may block without a click.
 */
export function reauthorizeResponse(
  input: { url: string; code: string },
  frameAncestors?: readonly string[],
): CoreResponse {
  return renderReauthorize(input, ancestorsDirective(frameAncestors));
}

/** `reauthorizeResponse` with the `frame-ancestors` directive as a string (undefined: none). */
export function renderReauthorize(
  input: { url: string; code: string },
  ancestors: string | undefined,
): CoreResponse {
  const nonce = toBase64(randomBytes(16));
  const reason = REAUTHORIZE_REASONS[input.code] ?? {
    title: 'Authorise the app again',
    message: 'The app needs you to authorise it in the store before it can continue.',
  };
  const body = `<h1>${escapeHtml(reason.title)}</h1>
<p>${escapeHtml(reason.message)}</p>
<p><a class="button" id="go" href="${escapeHtml(input.url)}" target="_top">Continue</a></p>
<p class="code">Reason: <code>${escapeHtml(input.code)}</code></p>
<script nonce="${nonce}">(function () { var u = document.getElementById('go').href; try { window.top.location.href = u; } catch (e) { /* the button stays */ } })();</script>`;
  return htmlResponse(
    200,
    layout(reason.title, body, nonce, 'info'),
    pageCsp(nonce, true, ancestors),
  );
}
