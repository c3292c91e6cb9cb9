/**
 * Issue 31, red team: path variants reached the app instead of the kit. On the
 * Fetch shell `POST /Webhooks` and `POST /webhooks/` fell through `kit.fetch`
 * to the app (404 there, or whatever the app's own catch-all does with a body
 * nobody verified), while Express sent them to the receiver. One matching rule
 * for both shells (DECISIONS.md: case-insensitive, one trailing slash): a
 * spelling of a kit path is the kit's, verified like the path itself, and never
 * reaches the app's own routes. Both apps of the parity harness end in a
 * catch-all that records what reached it.
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

const WEBHOOK_SPELLINGS = ['/Webhooks', '/webhooks/', '/WEBHOOKS', '/WebHooks/'];

describe.each(SHELLS)('%s', (shell) => {
  it('attack: a forged uninstall sent to a spelling of the webhook path is refused by the kit, never handed to the app', async () => {
    const app = parity.apps[shell];
    const { storeId } = await app.install();
    app.reachedApp.length = 0;
    for (const path of WEBHOOK_SPELLINGS) {
      // Signed with a secret that is not the app's.
      const forged = app.delivery(
        { type: 'app.uninstalled', data: { store_id: storeId } },
        { secret: `whsec_${Buffer.alloc(32, 9).toString('base64')}` },
      );
      const r = await app.send(path, {
        method: 'POST',
        headers: forged.headers,
        body: forged.body,
      });
      expect(`${path}: ${r.status} ${r.code}`).toBe(`${path}: 401 SIGNATURE_MISMATCH`);
    }
    expect(app.reachedApp).toEqual([]);
    expect(await app.kit.installations.get(storeId)).not.toBeNull();
  });

  it('attack: a callback spelled /Auth/Callback/ is the kit\u2019s (refused without its cookie), not the app\u2019s', async () => {
    const app = parity.apps[shell];
    app.reachedApp.length = 0;
    const r = await app
      .browser()
      .get(
        '/Auth/Callback/?code=stolen&state=stolen&store_id=6f1c1a52-7a4e-4d2b-9a43-0c3f2b1e9d10',
        TOP_LEVEL,
      );
    expect(r.status).toBe(400);
    expect(r.code).toBe('INSTALL_BINDING_MISSING');
    expect(app.reachedApp).toEqual([]);
  });
});
