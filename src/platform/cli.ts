#!/usr/bin/env node
// bin `store-platform`: see cli-run.ts (kept apart so tests run the CLI in-process).
import { runCli } from './cli-run.js';

runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // Code and message, one line: never Node's report of an uncaught error.
    const code = (err as { code?: unknown } | null)?.code;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(
      `store-platform: ${typeof code === 'string' ? `${code}: ` : ''}${message}\n`,
    );
    process.exitCode = 1;
  },
);
