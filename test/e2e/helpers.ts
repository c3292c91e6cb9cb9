/**
 * Shared by the e2e tests: a compiled copy of the template (linked to this
 * repository's built kit, as `npm run demo` does), free ports, fresh settings,
 * and a child process whose output can be awaited.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LaidTemplate, layOutTemplate } from '../helpers/template.js';

export type { LaidTemplate };

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHROMIUM = '/usr/bin/chromium';

/** Chromium's launch flags for a shared, offline CI machine. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolvePort(port));
    });
  });
}

/**
 * The Express template laid out as create-store-app lays it, linked to the built kit and
 * compiled into its own directory (so a parallel run cannot rewrite the files in use).
 */
export function prepareTemplate(): Promise<LaidTemplate> {
  return layOutTemplate('express');
}

export type DevSettings = Record<
  | 'NODE_ENV'
  | 'PORT'
  | 'STORE_APP_URL'
  | 'STORE_AUTH_URL'
  | 'STORE_APP_CLIENT_ID'
  | 'STORE_APP_CLIENT_SECRET'
  | 'STORE_APP_WEBHOOK_SECRET'
  | 'STORE_APP_SCOPES'
  | 'STORE_APP_ENCRYPTION_KEYS'
  | 'STORE_APP_SESSION_SECRET',
  string
>;

/** The settings `npm run dev` reads from `.env`, freshly generated, on two free ports. */
export async function devEnv(scopes: string): Promise<DevSettings> {
  const [appPort, platformPort] = [await freePort(), await freePort()];
  return {
    NODE_ENV: 'development',
    PORT: String(appPort),
    STORE_APP_URL: `http://127.0.0.1:${appPort}`,
    STORE_AUTH_URL: `http://127.0.0.1:${platformPort}`,
    STORE_APP_CLIENT_ID: `app_${randomBytes(8).toString('hex')}`,
    STORE_APP_CLIENT_SECRET: randomBytes(32).toString('base64url'),
    STORE_APP_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    STORE_APP_SCOPES: scopes,
    STORE_APP_ENCRYPTION_KEYS: randomBytes(32).toString('base64url'),
    STORE_APP_SESSION_SECRET: randomBytes(32).toString('base64url'),
  };
}

/** The parent's environment without settings that would leak into the child's. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k.startsWith('STORE_') || k === 'DATABASE_URL' || k === 'PORT') delete env[k];
  }
  return env;
}

export interface Running {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `re` in the output after `from`, or rejects on exit/timeout. */
  waitFor(re: RegExp, from?: number, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export function run(args: string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr!.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    output: () => out,
    async waitFor(re, from = 0, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = re.exec(out.slice(from));
        if (m) return m;
        if (child.exitCode !== null || Date.now() > deadline) {
          throw new Error(
            `waiting for ${re}: ${child.exitCode !== null ? 'exited' : 'timed out'}\n${out.slice(-2000)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export const ADMIN_STORE_URL = /http:\/\/\S+\/admin\/stores\/([0-9a-f-]{36})/;
