/**
 * Runs a command and collects its output without blocking the test worker's
 * event loop. A spawnSync of a minute (an install, a whole project's tsc)
 * starves vitest's worker RPC ("Timeout calling onTaskUpdate").
 */
import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Kill the command after this many ms. @default 240_000 */
  timeout?: number;
}

export function run(
  cmd: string,
  args: readonly string[],
  options: RunOptions,
): Promise<{ status: number | null; stdout: string; stderr: string; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      timeout: options.timeout ?? 240_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const done = (status: number | null, extra = '') =>
      resolve({ status, stdout, stderr: stderr + extra, out: `${stdout}\n${stderr}${extra}` });
    child.on('error', (err) => done(null, `\n${err.message}`));
    child.on('close', (status) => done(status));
  });
}
