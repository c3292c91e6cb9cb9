import { describe, expect, it } from 'vitest';
import { budgetedWarnings } from '../../src/core/log-budget.js';

function setup(perWindow = 3) {
  let t = 1_000_000;
  const lines: { obj: Record<string, unknown>; msg: string }[] = [];
  const log = budgetedWarnings(
    { warn: (obj, msg) => lines.push({ obj, msg }) },
    { perWindow, windowMs: 60_000, now: () => t },
  );
  return { log, lines, advance: (ms: number) => (t += ms) };
}

describe('budgetedWarnings', () => {
  it('writes perWindow lines of a message a window, then counts the rest on the next line', () => {
    const { log, lines, advance } = setup(3);
    for (let i = 0; i < 10; i++) log.warn({ i }, 'Launch token refused.');
    expect(lines.map((l) => l.obj)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    advance(59_999);
    log.warn({ i: 10 }, 'Launch token refused.');
    expect(lines).toHaveLength(3);
    advance(1);
    log.warn({ i: 11 }, 'Launch token refused.');
    // 7 dropped in the first window, 1 just before it ended.
    expect(lines[3]).toEqual({ obj: { i: 11, suppressed: 8 }, msg: 'Launch token refused.' });
    log.warn({ i: 12 }, 'Launch token refused.');
    expect(lines[4]?.obj).toEqual({ i: 12 });
  });

  it('keeps a budget per message: one flooded warning does not silence another', () => {
    const { log, lines } = setup(1);
    for (let i = 0; i < 5; i++) log.warn({}, 'Launch token refused.');
    log.warn({ method: 'POST' }, 'Cross-site write with the session cookie refused.');
    expect(lines.map((l) => l.msg)).toEqual([
      'Launch token refused.',
      'Cross-site write with the session cookie refused.',
    ]);
  });

  it('starts a new window when the clock steps back', () => {
    const { log, lines, advance } = setup(1);
    log.warn({}, 'm');
    log.warn({}, 'm');
    advance(-5_000);
    log.warn({}, 'm');
    expect(lines.map((l) => l.obj)).toEqual([{}, { suppressed: 1 }]);
  });
});
