/**
 * Property test of the Fetch shell's path reading (`pathnameOf`): kit.fetch reads the
 * path of `Request.url` without parsing the URL again, and must match exactly what
 * the URL parser says, whatever the path holds (dot segments, percent-escapes,
 * backslashes, queries, fragments, case): a mismatch would let a request reach a
 * kit route, or miss one, by its spelling.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathnameOf } from '../../src/shells/fetch/index.js';

const runs = Number(process.env.FUZZ_RUNS ?? 1000);

/** Pieces a request target is made of, the tricky ones included. */
const piece = fc.constantFrom(
  '/',
  '//',
  'auth',
  'AUTH',
  'callback',
  'webhooks',
  'healthz',
  '.',
  '..',
  '/./',
  '/../',
  '%2e',
  '%2E%2e',
  '%2f',
  '%5c',
  '\\',
  '?',
  '#',
  '&',
  '=',
  '~',
  '-',
  '_',
  ';',
  '@',
  ':',
  ' ',
  'é',
  '%',
);
const target = fc.array(piece, { maxLength: 10 }).map((xs) => `/${xs.join('')}`);
const origin = fc.constantFrom(
  'http://127.0.0.1:3000',
  'https://app.example',
  'https://app.example:8443',
  'http://[::1]:3000',
);

describe('kit.fetch reads the path of Request.url as the URL parser does', () => {
  it('pathnameOf(request.url) is new URL(request.url).pathname for any request target', () => {
    fc.assert(
      fc.property(origin, target, (o, t) => {
        let url: string;
        try {
          url = new Request(o + t).url;
        } catch {
          return; // not a URL a Request can carry
        }
        expect(pathnameOf(url)).toBe(new URL(url).pathname);
      }),
      { numRuns: runs },
    );
  });

  it('a URL that is not a serialisation (a runtime passing it through) still goes through the parser', () => {
    for (const url of [
      'http://app.example/a/../auth',
      'http://app.example/%61uth',
      'http://app.example\\auth',
      'http://app.example?x=/auth',
      'http://app.example#/auth',
      'HTTP://app.example/Auth/',
      'http://app.example',
    ]) {
      expect(pathnameOf(url), url).toBe(new URL(url).pathname);
    }
  });
});
