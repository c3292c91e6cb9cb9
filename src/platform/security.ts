import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { html, sendPage } from './html.js';

/** Names that always reach this machine only. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1'];

/** True for an interface name or address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\./.test(h);
}

/** The host name of a `Host` header, lower-cased, without port or IPv6 brackets; null if malformed. */
export function hostName(header: string | undefined): string | null {
  if (!header || header.length > 255) return null;
  const h = header.trim().toLowerCase();
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h) ?? /^([a-z0-9.-]+)(?::\d{1,5})?$/.exec(h);
  return m?.[1] ?? null;
}

/**
 * The names the platform answers to: loopback names, the host it was told to
 * bind, the address it is bound to (every interface's address for a wildcard
 * bind) and the configured extra names.
 */
export function allowedHostNames(
  bindHost: string,
  boundAddress: string,
  extra: readonly string[],
): Set<string> {
  const names = new Set<string>(LOOPBACK_HOSTS);
  for (const n of [bindHost, boundAddress, ...extra]) {
    const name = hostName(isIP(n) === 6 ? `[${n}]` : n);
    if (name) names.add(name);
  }
  if (boundAddress === '0.0.0.0' || boundAddress === '::') {
    for (const list of Object.values(networkInterfaces())) {
      for (const i of list ?? []) names.add(i.address.toLowerCase());
    }
  }
  return names;
}

/**
 * DNS-rebinding defence: a page on `evil.example` whose name is re-pointed at
 * 127.0.0.1 reaches the platform with `Host: evil.example`. Every request
 * whose Host is not one of the platform's own names is refused before any
 * route (the dashboard shows client secrets, the admin uninstalls apps).
 */
export function allowedHostsOnly(allowed: () => ReadonlySet<string>): RequestHandler {
  return function allowedHost(req: Request, res: Response, next: NextFunction) {
    const name = hostName(req.headers.host);
    if (name !== null && allowed().has(name)) {
      next();
      return;
    }
    res.status(421).set('Cache-Control', 'no-store').json({
      error:
        'This platform does not answer to that Host. Use its own address, or add the name to allowedHosts (--allowed-host).',
      code: 'HOST_NOT_ALLOWED',
      details: [],
    });
  };
}

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
