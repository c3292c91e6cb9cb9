/**
 * Issue 31, red team (medium): an install budget anyone could spend. When
 * `kit.fetch` gets no `remoteAddress` (the docs' Next.js example by default, a
 * Hono app behind a proxy that forgot it), every caller shares one callback
 * bucket. About 20 junk `GET /auth` + `/auth/callback` pairs a minute from one
 * client used to make every real merchant's callback answer
 * `429 INSTALL_RATE_LIMITED` (the code never exchanged, nothing logged).
 * DECISIONS.md: the shared/unknown bucket counts only failed exchanges and
 * refusals, never callbacks that succeed, and the kit warns, naming the fix.
 * The Fetch app of the parity harness, without `remoteAddress`, over real sockets.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Parity, startParity, TOP_LEVEL } from '../helpers/shell-parity.js';

/** The kit's default: callbacks a source may make per minute. */
const PER_MINUTE = 20;
let parity: Parity;

beforeAll(async () => {
  parity = await startParity({
    shells: ['fetch'],
    fetchRemoteAddress: 'none',
    kit: { auth: { maxCallbacksPerSourcePerMinute: PER_MINUTE } },
  });
}, 120_000);
afterAll(async () => {
  await parity?.close();
});

it('attack: junk callbacks without a client address cannot keep a merchant with a valid code from installing', {
  timeout: 120_000,
}, async () => {
  const app = parity.apps.fetch;
  const { platform } = parity;
  const { storeId: victimStore } = platform.createStore({ name: 'Victim' });
  const { storeId: junkStore } = platform.createStore({ name: 'Attacker' });
  const exchanges = platform.stats().tokenRequests.authorization_code;

  // The attacker: a genuine pending install each time (anyone can begin one), answered
  // with a code the platform never issued. More than a minute's budget of one source.
  const junk: number[] = [];
  for (let i = 0; i <= PER_MINUTE; i++) {
    const jar = app.browser();
    const begun = await jar.get(`/auth?store_id=${junkStore}`, TOP_LEVEL);
    expect(begun.status).toBe(302);
    const state = new URL(String(begun.headers.location)).searchParams.get('state');
    const r = await jar.get(
      `/auth/callback?code=junk-${randomUUID()}&state=${state}&store_id=${junkStore}`,
      TOP_LEVEL,
    );
    junk.push(r.status);
  }
  // None of the junk installed anything.
  expect(
    junk.every((s) => s === 302 || s === 400 || s === 429),
    junk.join(),
  ).toBe(true);
  expect(await app.kit.installations.get(junkStore)).toBeNull();

  // The merchant, in the same minute, with a code the platform issued: installed.
  const merchant = app.browser();
  const begun = await merchant.get(`/auth?store_id=${victimStore}`, TOP_LEVEL);
  expect(begun.status).toBe(302);
  const callbackUrl = platform.approveInstall({
    authorizeUrl: String(begun.headers.location),
    storeId: victimStore,
  });
  const done = await merchant.get(callbackUrl, TOP_LEVEL);
  expect(done.code, `the merchant's callback answered ${done.status}`).toBeNull();
  expect(done.status).toBe(302);
  expect(await app.kit.installations.get(victimStore)).not.toBeNull();
  // The merchant's code was exchanged (with the platform, once).
  expect(platform.stats().tokenRequests.authorization_code).toBeGreaterThan(exchanges);
});

it('the kit warns on the first callback without a client address, naming the fix, once', async () => {
  const app = parity.apps.fetch;
  // Two callbacks of genuine pending installs without an address (more if the test above ran).
  const { storeId } = parity.platform.createStore({ name: 'Warned' });
  for (let i = 0; i < 2; i++) {
    const jar = app.browser();
    const begun = await jar.get(`/auth?store_id=${storeId}`, TOP_LEVEL);
    const state = new URL(String(begun.headers.location)).searchParams.get('state');
    await jar.get(`/auth/callback?code=junk-${i}&state=${state}&store_id=${storeId}`, TOP_LEVEL);
  }
  const warnings = app.logs.filter((line) => /remoteAddress/.test(line));
  expect(warnings.length, app.logs.slice(-5).join('\n')).toBeGreaterThanOrEqual(1);
  const warning = JSON.parse(warnings[0]!) as { level: number; msg: string };
  expect(warning.level).toBe(40);
  // One warning at start at most, and one for the first callback: not one per request.
  expect(warnings.length).toBeLessThanOrEqual(2);
});
