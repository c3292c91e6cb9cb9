/**
 * Issue 32 item 10: after the install the admin opens the app's URL (`/`) in
 * its iframe, so every server example of docs/runtimes.md serves `/` (behind
 * the kit), or the merchant meets a 404 there — the Workers ones (`createWorker`) too. The examples type-check as a
 * consumer (`npm run check:package`); the Next.js files run in
 * test/shells/next-route.test.ts.
 */
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { extractExamples } from '../../scripts/doc-examples.js';

const root = resolve(import.meta.dirname, '..', '..');
const examples = extractExamples(root).filter((e) => e.from.startsWith('docs/runtimes.md'));

it('every server example of docs/runtimes.md serves the page the admin opens, `/`', () => {
  const servers = examples.filter((e) =>
    /\b(serve\(|Bun\.serve\(|Deno\.serve\(|express\(\)|createWorker(<\w+>)?\()/.test(e.code),
  );
  expect(servers.map((e) => e.from).length).toBeGreaterThanOrEqual(6);
  for (const e of servers) {
    expect(e.code, e.from).toMatch(/app\.get\('\/',|pathname === '\/'/);
  }
  expect(examples.filter((e) => e.program === 'next').map((e) => e.file)).toContain('app/route.ts');
});
