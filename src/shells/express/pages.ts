/** The kit's pages written to Express's `res`, keeping the frame-ancestors the headers set. */
import type { Response } from 'express';
import type { CoreResponse } from '../../core/http.js';
import { breakoutResponse, type PageInput, renderPage } from '../../install/pages.js';

/** The frame-ancestors directive the response already carries (the kit's headers), if any. */
export function existingAncestors(res: Response): string | undefined {
  const existing = res.getHeader('content-security-policy');
  return typeof existing === 'string' ? /frame-ancestors[^;]*/.exec(existing)?.[0] : undefined;
}

function writeHtml(res: Response, r: CoreResponse): void {
  res.status(r.status);
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  res.type('html').send(r.body.kind === 'html' ? r.body.value : '');
}

/** `pageResponse` written to `res`, keeping the frame-ancestors the kit's headers set. */
export function sendPage(res: Response, page: PageInput): void {
  writeHtml(res, renderPage(page, existingAncestors(res)));
}

/** `breakoutResponse` written to `res`. */
export function sendBreakout(res: Response, topUrl: string, frameAncestors: string[]): void {
  writeHtml(res, breakoutResponse(topUrl, frameAncestors));
}
