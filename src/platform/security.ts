import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { html, sendPage } from './html.js';

/**
 * CSRF defence for the platform's HTML forms (a local dev tool, no accounts):
 * the browser's Origin (or, failing that, Referer) must be the platform's own
 * origin, and a cross-site Sec-Fetch-Site is refused outright.
 */
export function sameOriginForms(origin: () => string): RequestHandler {
  return function sameOriginForm(req: Request, res: Response, next: NextFunction) {
    const site = req.get('sec-fetch-site');
    const from = req.get('origin') ?? refererOrigin(req.get('referer'));
    // The platform's own origin, or the one the browser reached it by (--host 0.0.0.0 on a LAN).
    const self =
      from !== undefined && (from === origin() || from === `${req.protocol}://${req.get('host')}`);
    if ((site !== undefined && site !== 'same-origin' && site !== 'none') || !self) {
      sendPage(res, {
        status: 403,
        title: 'Request refused',
        body: html`<div class="card error"><h1>Request refused</h1><p>This form must be submitted from the platform's own pages (cross-site request).</p></div>`,
      });
      return;
    }
    next();
  };
}

function refererOrigin(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}
