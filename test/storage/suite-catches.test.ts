/**
 * The conformance suite is a gate, not a formality: run on adapters that each
 * break one rule (fixtures/broken-adapters.check.ts, in a child vitest), it
 * fails exactly the cases about that rule and passes the unbroken reference.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../helpers/run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'sak-suite-catches-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Failed test names per broken adapter. */
const failed = new Map<string, string[]>();
const passed = new Map<string, number>();

beforeAll(async () => {
  const out = join(dir, 'report.json');
  await run(
    process.execPath,
    [
      join(root, 'node_modules', 'vitest', 'vitest.mjs'),
      'run',
      '--config',
      'test/storage/fixtures/vitest.check.config.ts',
      '--reporter=json',
      `--outputFile=${out}`,
    ],
    { cwd: root, env: { ...process.env, CI: 'true' }, timeout: 120_000 },
  );
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    testResults: Array<{
      assertionResults: Array<{ ancestorTitles: string[]; title: string; status: string }>;
    }>;
  };
  for (const t of report.testResults.flatMap((r) => r.assertionResults)) {
    const adapter = t.ancestorTitles[0]!.replace('StorageAdapter conformance: ', '');
    if (t.status === 'passed') passed.set(adapter, (passed.get(adapter) ?? 0) + 1);
    else failed.set(adapter, [...(failed.get(adapter) ?? []), t.title]);
  }
}, 180_000);

describe('the conformance suite catches broken adapters', () => {
  it('passes the unbroken reference adapter', () => {
    expect(failed.get('reference')).toBeUndefined();
    expect(passed.get('reference')).toBeGreaterThan(20);
  });

  it.each([
    ['replayable claims', 'two processes claim one id: exactly one wins, and a replay never does'],
    ['no webhook dedupe', 'two processes receive one id in parallel: effects run once'],
    ['lease without compare-and-swap', 'two processes race for one lease: exactly one wins'],
    [
      'errors read as not found',
      'a closed adapter rejects with StorageError, never answers "not found"',
    ],
  ])('fails an adapter with %s', (adapter, mustFail) => {
    expect(failed.get(adapter)).toContain(mustFail);
  });
});
