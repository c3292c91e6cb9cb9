/**
 * The few HTML pages the install routes answer with. Everything interpolated
 * is escaped; no page ever shows a code, state, token or secret.
 */
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';

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

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto; padding: 0 1rem; line-height: 1.5">
${body}
</body>
</html>
`;
}

export function sendPage(res: Response, page: PageInput): void {
  const retry = page.retryUrl
    ? `<p><a href="${escapeHtml(page.retryUrl)}" target="_top">${escapeHtml(page.retryLabel ?? 'Try again')}</a></p>`
    : '';
  const body = `<h1>${escapeHtml(page.title)}</h1>\n<p>${escapeHtml(page.message)}</p>\n${retry}`;
  res
    .status(page.status)
    .set('Cache-Control', 'no-store')
    .set('X-Store-App-Error', page.code)
    .type('html')
    .send(layout(page.title, body));
}

/**
 * Leaves the admin iframe: the authorize page must open at top level, where
 * the SameSite=Lax binding cookie is first-party (a partitioned iframe cookie
 * would be invisible to the top-level callback). The link is the fallback
 * when scripts are blocked or the frame may not navigate its parent.
 */
export function sendBreakout(res: Response, topUrl: string, frameAncestors: string[]): void {
  const nonce = randomBytes(16).toString('base64');
  const url = escapeHtml(topUrl);
  const body = `<h1>Continue to install</h1>
<p>The installation continues in the full window.</p>
<p><a id="go" href="${url}" target="_top">Continue</a></p>
<script nonce="${nonce}">(function () { var u = document.getElementById('go').href; try { window.top.location.href = u; } catch (e) { /* the link stays */ } })();</script>`;
  res
    .status(200)
    .set('Cache-Control', 'no-store')
    .set(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors ${frameAncestors.join(' ')}`,
    )
    .type('html')
    .send(layout('Continue to install', body));
}
