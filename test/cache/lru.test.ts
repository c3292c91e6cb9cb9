/**
 * The bounded map behind every per-store structure: the bound holds, the least
 * recently used entry goes first, and a busy entry is never dropped.
 */
import { describe, expect, it } from 'vitest';
import { createLru } from '../../src/cache/lru.js';

describe('createLru', () => {
  it('never holds more than max entries and evicts the least recently used', () => {
    const evicted: string[] = [];
    const lru = createLru<string, number>({ max: 3, onEvict: (_v, k) => evicted.push(k) });
    for (const [i, k] of ['a', 'b', 'c'].entries()) lru.set(k, i);
    expect(lru.get('a')).toBe(0); // a is now the most recent: b is the oldest
    lru.set('d', 3);
    expect(lru.size).toBe(3);
    expect(evicted).toEqual(['b']);
    expect(lru.has('b')).toBe(false);
    lru.set('e', 4);
    expect(evicted).toEqual(['b', 'c']);
    for (let i = 0; i < 1000; i++) lru.set(`k${i}`, i);
    expect(lru.size).toBe(3);
  });

  it('peek does not change the order; replacing a key refreshes it', () => {
    const lru = createLru<string, number>({ max: 2 });
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.peek('a')).toBe(1);
    lru.set('c', 3); // a is still the oldest
    expect(lru.has('a')).toBe(false);
    lru.set('b', 20); // b becomes the newest
    lru.set('d', 4);
    expect(lru.has('c')).toBe(false);
    expect(lru.get('b')).toBe(20);
  });

  it('keeps busy entries past the bound and evicts them once they are idle', () => {
    const busy = new Set(['a']);
    const lru = createLru<string, string>({ max: 2, canEvict: (_v, k) => !busy.has(k) });
    lru.set('a', 'a');
    lru.set('b', 'b');
    lru.set('c', 'c'); // a is the oldest but busy: b goes
    expect(lru.has('a')).toBe(true);
    expect(lru.has('b')).toBe(false);
    busy.add('c');
    lru.set('d', 'd'); // a and c busy: the bound is exceeded by busy entries only
    expect(lru.has('a') && lru.has('c') && lru.has('d')).toBe(true);
    busy.clear();
    lru.set('e', 'e');
    expect(lru.size).toBe(2);
  });

  it('onDrop hears of every value that leaves, however it goes, and of no read', () => {
    const dropped: string[] = [];
    const busy = new Set<string>();
    const lru = createLru<string, string>({
      max: 2,
      canEvict: (_v, k) => !busy.has(k),
      onDrop: (v) => dropped.push(v),
    });
    lru.set('a', 'a1');
    lru.set('b', 'b1');
    expect(lru.get('a')).toBe('a1'); // a read moves it: nothing leaves
    lru.set('a', 'a1'); // the same value again: nothing leaves
    lru.set('a', 'a2'); // replaced
    lru.set('c', 'c1'); // b evicted by the bound
    busy.add('a');
    lru.set('d', 'd1'); // a is busy: c goes, a stays past the bound
    expect(lru.delete('d')).toBe(true);
    expect(lru.delete('zz')).toBe(false);
    lru.set('e', 'e1');
    lru.prune((v) => v === 'e1');
    lru.clear();
    expect(dropped).toEqual(['a1', 'b1', 'c1', 'd1', 'e1', 'a2']);
    expect(lru.size).toBe(0);
  });

  it('prune drops what the predicate calls stale', () => {
    const lru = createLru<string, number>({ max: 10 });
    for (let i = 0; i < 6; i++) lru.set(String(i), i);
    expect(lru.prune((v) => v % 2 === 0)).toBe(3);
    expect(lru.size).toBe(3);
    expect(lru.has('1') && lru.has('3') && lru.has('5')).toBe(true);
  });

  it('never evicts an entry by the max/2 moves after it was read, however many stores come after', () => {
    // The approximation behind cheap reads: a hot store read on every request stays cached
    // while a stream of other stores passes through a large cache.
    const max = 100;
    const lru = createLru<string, number>({ max });
    lru.set('hot', 0);
    for (let i = 0; i < 10_000; i++) {
      lru.set(`cold${i}`, i);
      if (i % (max / 2 - 1) === 0) expect(lru.get('hot')).toBe(0);
      expect(lru.size).toBeLessThanOrEqual(max);
    }
    expect(lru.has('hot')).toBe(true);
    // Not read for more than max moves: it goes like any other.
    for (let i = 0; i < max; i++) lru.set(`later${i}`, i);
    expect(lru.has('hot')).toBe(false);
  });

  it('evicts in least-recently-used order among entries not read since they moved', () => {
    const evicted: string[] = [];
    const lru = createLru<string, number>({ max: 10, onEvict: (_v, k) => evicted.push(k) });
    for (let i = 0; i < 10; i++) lru.set(`k${i}`, i);
    // k0 is 10 moves old (more than max/2): reading it moves it to the back.
    lru.get('k0');
    for (let i = 10; i < 13; i++) lru.set(`k${i}`, i);
    expect(evicted).toEqual(['k1', 'k2', 'k3']);
  });
});
