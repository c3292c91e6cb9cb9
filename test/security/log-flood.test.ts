/**
 * Red team: a log flood. A refused launch token logs a warning, and anyone can send the
 * admin's launch shape (`?launch=<junk>` in a framed navigation) as fast as they like: one
 * warn line each was a flood of the app's logs paid for by nothing but requests. The
 * warnings a client can cause are now budgeted per message (10 a minute, the rest counted
 * on the next line); the answers are unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FRAMED, type Parity, SHELLS, startParity } from '../helpers/shell-parity.js';

let parity: Parity;
beforeAll(async () => {
  parity = await startParity();
}, 120_000);
afterAll(async () => {
  await parity?.close();
});

describe.each(SHELLS)('%s', (shell) => {
  it('attack: 40 junk launch tokens write at most 10 warning lines, and each is still answered', async () => {
    const app = parity.apps[shell];
    const refusals = () => app.logs.filter((line) => line.includes('Launch token refused.'));
    const before = refusals().length;
    const statuses = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const r = await app.send(`/?launch=junk.${i}.token`, { headers: FRAMED });
      statuses.add(r.status);
    }
    // The same answer for every one (no session: the kit's re-authorisation), never a 500.
    expect(statuses.size).toBe(1);
    expect([...statuses][0]).toBeLessThan(500);
    const written = refusals().length - before;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThanOrEqual(10);
  });
});
