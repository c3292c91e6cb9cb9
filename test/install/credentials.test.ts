/**
 * A wrong client secret: the platform answers the code exchange with
 * invalid_client. The operator must learn which setting to fix; the merchant
 * must not be told to retry, and nobody may see the secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTALL_ERROR_CODES as E } from '../../src/install/errors.js';
import { Browser, begin, type Harness, startHarness } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'sak-creds-'));
const WRONG = 'wrong-client-secret-0123456789abcdef';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    databaseUrl: join(dir, 'creds.db'),
    kit: { oauth: { clientSecret: WRONG } },
  });
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('invalid_client on the code exchange', () => {
  it('logs a message naming STORE_APP_CLIENT_SECRET; the page names no secret and stores nothing', async () => {
    const b = new Browser();
    const res = await b.get(
      h.platform.approveInstall({ authorizeUrl: await begin(h, b), storeId: h.storeId }),
    );
    expect(res.status).toBe(500);
    expect(res.headers.get('x-store-app-error')).toBe(E.CLIENT_REJECTED);
    const html = await res.text();
    expect(html).not.toContain(WRONG);
    expect(html).not.toContain(h.clientSecret);
    expect(html).not.toMatch(/unavailable/i);
    expect(html).toContain('developer');
    expect(await h.kit.installations.list()).toEqual([]);

    const line = h.logs.find((l) => l.includes('invalid_client'));
    expect(line).toBeDefined();
    expect(line).toContain('STORE_APP_CLIENT_SECRET');
    const logs = h.logs.join('\n');
    expect(logs).not.toContain(WRONG);
    expect(logs).not.toContain(h.clientSecret);
  });
});
