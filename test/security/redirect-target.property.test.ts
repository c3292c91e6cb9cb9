/**
 * Property test of the one redirect-target normaliser: whatever the input,
 * what it returns stays on the app's origin under every decoding, and is a
 * fixed point.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeRedirectTarget } from '../../src/http/redirect-target.js';

const APP = 'https://app.example';
const BASED = 'https://app.example/base';
const runs = Number(process.env.FUZZ_RUNS ?? 1000);

/** Pieces attackers combine: separators, encodings of them, dot segments, hosts, controls. */
const piece = fc.constantFrom(
  '/',
  '//',
  '\\',
  '.',
  '..',
  '%2e',
  '%2E',
  '%252e',
  '%2f',
  '%2F',
  '%252f',
  '%5c',
  '%255c',
  '%25',
  '%',
  'evil.example',
  'app.example',
  '@',
  ':',
  '?',
  '#',
  'https:',
  'http://evil.example',
  'https://app.example',
  'javascript:',
  '\t',
  '\n',
  '%0d%0a',
  '%00',
  ' ',
  'a',
  'settings',
);
const crafted = fc.array(piece, { maxLength: 12 }).map((p) => p.join(''));

function decodings(v: string): string[] {
  const out = [v];
  let cur = v;
  for (let i = 0; i < 5; i++) {
    try {
      const next = decodeURIComponent(cur);
      if (next === cur) break;
      out.push(next);
      cur = next;
    } catch {
      break;
    }
  }
  return out;
}

function checkResult(result: string | null, appUrl: string): void {
  if (result === null) return;
  const app = new URL(appUrl);
  const base = app.pathname.replace(/\/+$/, '');
  expect(result.startsWith('/')).toBe(true);
  expect(result.startsWith('//')).toBe(false);
  expect(result.includes('\\')).toBe(false);
  // As the kit lands the merchant (origin + base + target) and as a relative redirect would.
  expect(new URL(app.origin + base + result).origin).toBe(app.origin);
  for (const page of [`${app.origin}/`, `${app.origin}/x/y/`, appUrl]) {
    for (const d of decodings(result)) {
      let resolved: URL | null = null;
      try {
        resolved = new URL(d.replaceAll('\\', '/'), page);
      } catch {
        resolved = null;
      }
      if (resolved) expect(resolved.origin).toBe(app.origin);
    }
  }
  // A fixed point: normalising again changes nothing.
  expect(normalizeRedirectTarget(result, appUrl)).toBe(result);
}

describe('normalizeRedirectTarget', () => {
  it('redirect targets: anything accepted stays on the app origin under every decoding and is a fixed point (fast-check)', () => {
    fc.assert(
      fc.property(fc.oneof(crafted, fc.string(), fc.webUrl(), fc.webPath()), (input) => {
        checkResult(normalizeRedirectTarget(input, APP), APP);
        checkResult(normalizeRedirectTarget(input, BASED), BASED);
      }),
      { numRuns: runs },
    );
  });

  it('known open-redirect shapes are refused and ordinary paths kept', () => {
    for (const bad of [
      '/..//evil.example',
      '/.%2e//evil.example',
      '/%2e%2e//evil.example',
      '/%252e%252e%252f%252fevil.example',
      '//evil.example',
      '/\\evil.example',
      '\\\\evil.example',
      'https://evil.example/',
      'https://app.example@evil.example/',
      'javascript:alert(1)',
      '/x\r\nLocation: https://evil.example',
      '',
    ]) {
      expect(normalizeRedirectTarget(bad, APP), bad).toBeNull();
    }
    expect(normalizeRedirectTarget('/orders/../settings?tab=1#top', APP)).toBe(
      '/settings?tab=1#top',
    );
    expect(normalizeRedirectTarget('https://app.example/base/orders?x=1', BASED)).toBe(
      '/orders?x=1',
    );
    expect(normalizeRedirectTarget('https://app.example/other', BASED)).toBeNull();
    expect(normalizeRedirectTarget('/discount?pct=50%25', APP)).toBe('/discount?pct=50%25');
  });
});
