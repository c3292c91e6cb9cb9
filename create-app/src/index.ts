#!/usr/bin/env node
import { main } from './cli.js';

const code = await main(process.argv.slice(2), {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  isTTY: process.stdin.isTTY === true && process.stdout.isTTY === true,
  env: process.env,
  cwd: process.cwd(),
});
process.exitCode = code;
