/**
 * The type tests: `test/types/*.types.ts` must compile. Their `@ts-expect-error`
 * lines prove that misspelt keys, wrong enums and foreign sort fields are
 * compile errors (tsc fails on an `@ts-expect-error` that catches nothing).
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(here, '../../node_modules/typescript/bin/tsc');

it('the client type tests compile: inputs exact, enums unions, sorts per resource, outputs typed', async () => {
  const run = await promisify(execFile)(
    process.execPath,
    [tsc, '-p', join(here, 'tsconfig.json')],
    {
      cwd: join(here, '../..'),
    },
  ).then(
    (r) => ({ code: 0, out: r.stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
  );
  expect(run.out).toBe('');
  expect(run.code).toBe(0);
}, 120_000);
