/**
 * Issue 31, red team: app routes without the kit's header set on the Fetch
 * shell. On Express every route behind the kit gets nosniff, HSTS,
 * Referrer-Policy, COOP and a CSP with the admin as the only frame ancestor
 * (`Vary: Authorization` and the script-read set for bearer requests); on Fetch
 * there was no way to apply that set, so the Hono template's `/api/notes` (text
 * the merchant wrote) went out without nosniff. `kit.secureResponse` applies the
 * same set (DECISIONS.md). The parity table checks the set on each kind of
 * request the app makes; this is the attack it stops, on both shells.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Parity, SHELLS, startParity, TOP_LEVEL } from '../helpers/shell-parity.js';

let parity: Parity;
beforeAll(async () => {
  parity = await startParity();
}, 120_000);
afterAll(async () => {
  await parity?.close();
});

describe.each(SHELLS)('%s', (shell) => {
  it('attack: a link that opens the notes API as a page cannot have the merchant\u2019s text rendered or framed', async () => {
    const app = parity.apps[shell];
    const { jar } = await app.install();
    // Someone links the merchant to the API route itself: a top-level navigation with the cookie.
    const r = await jar.get('/api/notes', TOP_LEVEL);
    expect(r.status).toBe(200);
    expect(r.text).toContain('<b>');
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    // Never sniffed into HTML, never framed by another site, no script even if it were.
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const csp = String(r.headers['content-security-policy'] ?? '');
    expect(csp).toContain(`frame-ancestors ${new URL(app.platform.authUrl).origin}`);
    expect(csp).toMatch(/(default-src|script-src) 'self'/);
  });
});
