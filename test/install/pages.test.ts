/**
 * The kit's own pages (install failed, installation expired, store or
 * database unavailable) are styled under a CSP of their own, whatever the
 * host app's CSP allows, and keep the app's frame-ancestors.
 */
import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { sendBreakout, sendPage } from '../../src/shells/express/pages.js';

function appWith(csp: boolean) {
  const app = express();
  if (csp) {
    app.use(
      helmet({
        contentSecurityPolicy: {
          directives: { styleSrc: ["'self'"], frameAncestors: ['https://admin.example'] },
        },
      }),
    );
  }
  app.get('/page', (_req, res) => {
    sendPage(res, {
      status: 502,
      code: 'INSTALL_TOKEN_EXCHANGE_FAILED',
      title: 'Installation failed <b>',
      message: 'The platform did not answer. "Try" again.',
      retryUrl: '/auth?store_id=x&y="z"',
    });
  });
  app.get('/breakout', (_req, res) => {
    sendBreakout(res, 'https://app.example/auth?store_id=1', ['https://admin.example']);
  });
  return app;
}

describe('kit pages', () => {
  it('carry their stylesheet under their own nonce and keep the app frame-ancestors', async () => {
    const res = await request(appWith(true)).get('/page');
    expect(res.status).toBe(502);
    expect(res.headers['x-store-app-error']).toBe('INSTALL_TOKEN_EXCHANGE_FAILED');
    expect(res.headers['cache-control']).toBe('no-store');
    const nonce = /<style nonce="([^"]+)">/.exec(res.text)?.[1];
    expect(nonce).toBeTruthy();
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('frame-ancestors https://admin.example');
    expect(csp).not.toContain('script-src');
    // No inline style attribute a nonce cannot allow.
    expect(res.text).not.toMatch(/\sstyle="/);
  });

  it('escape every value and show the code, never more', async () => {
    const res = await request(appWith(false)).get('/page');
    expect(res.text).toContain('Installation failed &#60;b&#62;');
    expect(res.text).toContain('&#34;Try&#34; again.');
    expect(res.text).toContain('href="/auth?store_id=x&#38;y=&#34;z&#34;"');
    expect(res.text).toContain('<code>INSTALL_TOKEN_EXCHANGE_FAILED</code>');
    // Without an app CSP the page still has its own, without frame-ancestors.
    expect(String(res.headers['content-security-policy'])).not.toContain('frame-ancestors');
  });

  it('the iframe breakout: one nonce for its style and script, framing by the admin only', async () => {
    const res = await request(appWith(true)).get('/breakout');
    const nonce = /<script nonce="([^"]+)">/.exec(res.text)?.[1];
    expect(res.text).toContain(`<style nonce="${nonce}">`);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain(`script-src 'nonce-${nonce}'`);
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain('frame-ancestors https://admin.example');
  });
});
