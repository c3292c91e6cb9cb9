/**
 * Issue 31, red team: the two webhook pipelines checked in different orders.
 * An unsigned delivery declaring 100 MiB got `400 MISSING_HEADERS` on Express and
 * `413 PAYLOAD_TOO_LARGE` on Fetch, so an unauthenticated sender could read the
 * receiver's body bound off the Fetch shell by declaring sizes. One order for
 * both shells (method, content type, signature headers, then size): whatever an
 * unsigned sender declares, it learns nothing but "unsigned", and no byte of its
 * body is read. The parity table has the 100 MiB case; this is the probe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Parity, SHELLS, startParity, WEBHOOK_LIMITS } from '../helpers/shell-parity.js';

let parity: Parity;
beforeAll(async () => {
  parity = await startParity();
}, 120_000);
afterAll(async () => {
  await parity?.close();
});

/** Sizes an attacker would try to find the bound: under, at, just over, far over. */
const DECLARED = [
  100,
  WEBHOOK_LIMITS.maxBodyBytes,
  WEBHOOK_LIMITS.maxBodyBytes + 1,
  WEBHOOK_LIMITS.maxBodyBytes * 4,
  1024 ** 3,
];

describe.each(SHELLS)('%s', (shell) => {
  it('attack: an unsigned sender cannot probe the body limit (the same 400 whatever it declares, no byte read)', async () => {
    const app = parity.apps[shell];
    const answers: string[] = [];
    for (const declared of DECLARED) {
      // Headers only: an answer at all proves the kit decided before reading the body.
      const r = await app.send('/webhooks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        declaredLength: declared,
      });
      answers.push(`${declared}: ${r.status} ${r.code}`);
    }
    expect(answers).toEqual(DECLARED.map((d) => `${d}: 400 MISSING_HEADERS`));
    expect(app.handled).toEqual([]);
  });

  it('attack: a stale signature cannot probe it either (401 before the size)', async () => {
    const app = parity.apps[shell];
    // Signed an hour ago: the timestamp is refused before any byte, whatever the size.
    const d = app.delivery(
      { type: 'orders.create', data: {} },
      {
        at: new Date(Date.now() - 3_600_000),
      },
    );
    const answers: string[] = [];
    for (const declared of DECLARED) {
      const r = await app.send('/webhooks', {
        method: 'POST',
        headers: d.headers,
        declaredLength: declared,
      });
      answers.push(`${declared}: ${r.status}`);
    }
    expect(answers).toEqual(DECLARED.map((d) => `${d}: 401`));
  });
});
