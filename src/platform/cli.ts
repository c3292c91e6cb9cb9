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
    process.stderr.write(`store-platform: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
