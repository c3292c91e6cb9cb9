/**
 * `logger.instance` as any object with the level methods: validated at start
 * naming what is missing, records redacted before the app's logger sees them
 * (over a real install against the local platform), level mapping, and a
 * throwing logger that cannot break a request.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalsOf } from '../../src/compose/internals.js';
import { resolveConfig } from '../../src/config/index.js';
import { createKitLogger } from '../../src/http/logger.js';
import type { StoreAppLogger } from '../../src/http/options.js';
import { configProblem, validEnv } from '../helpers/config.js';
import { Browser, begin, type Harness, startHarness } from '../install/harness.js';

const ENV = validEnv();

interface Call {
  method: string;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

/** A console-like logger without trace/fatal/child, recording every call. */
function recordingLogger(): StoreAppLogger & { calls: Call[] } {
  const calls: Call[] = [];
  const at =
    (method: string) =>
    (obj: object, msg?: string): void => {
      calls.push({ method, obj: obj as Record<string, unknown>, msg });
    };
  return { calls, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const problem = (options: object) => configProblem(options, ENV);

describe('logger.instance: any logger with the level methods', () => {
  it('refuses at start a logger missing a level method, naming the setting and each missing method', () => {
    const err = problem({ logger: { instance: { info() {}, debug() {} } } });
    expect(err.setting).toBe('logger.instance');
    expect(err.message).toContain('warn(), error()');
    expect(err.message).toContain('pino');
    const notObject = problem({ logger: { instance: 'console' } });
    expect(notObject.setting).toBe('logger.instance');
    // A complete one is accepted, and its string level becomes the default level.
    const ok = { ...recordingLogger(), level: 'debug' };
    const resolved = resolveConfig({ logger: { instance: ok } } as never, ENV);
    expect(resolved.logger.instance).toBe(ok);
    expect(resolved.logger.level).toBe('debug');
    // console has every method (and no string level).
    expect(resolveConfig({ logger: { instance: console } }, ENV).logger.instance).toBe(console);
  });

  it('hands redacted objects in pino order, bindings included, trace→debug and fatal→error', () => {
    const target = recordingLogger();
    const log = createKitLogger({ level: 'trace', instance: target, destination: undefined });
    const child = log.child({ component: 'client' });
    child.info(
      {
        storeId: 'store-1',
        accessToken: 'at_live_abcdefghijklmnop',
        req: {
          headers: { authorization: 'Bearer at_live_abcdefghijklmnop', cookie: 'sid=s3cr3t' },
        },
        body: { client_secret: 'cs_abcdefghijklmnop', refresh_token: 'rt_abcdefghijklmnop' },
      },
      'calling the platform',
    );
    child.trace('fine detail');
    child.fatal({ err: Object.assign(new Error('boom'), { code: 'STORAGE_UNAVAILABLE' }) }, 'down');

    expect(target.calls.map((c) => c.method)).toEqual(['info', 'debug', 'error']);
    const first = target.calls[0]!;
    expect(first.msg).toBe('calling the platform');
    expect(first.obj).toMatchObject({
      module: 'store-app-kit',
      component: 'client',
      storeId: 'store-1',
      accessToken: '[redacted]',
      req: { headers: { authorization: '[redacted]', cookie: '[redacted]' } },
      body: { client_secret: '[redacted]', refresh_token: '[redacted]' },
    });
    expect(first.obj).not.toHaveProperty('level');
    expect(first.obj).not.toHaveProperty('msg');
    const text = JSON.stringify(target.calls);
    for (const s of ['at_live_', 's3cr3t', 'cs_abc', 'rt_abc']) expect(text).not.toContain(s);
    // Error codes survive (errorCode), as with the kit's own pino output.
    expect(target.calls[2]!.obj).toMatchObject({ err: { errorCode: 'STORAGE_UNAVAILABLE' } });
  });

  it('a logger that throws never breaks the code that logged', () => {
    const broken: StoreAppLogger = {
      debug() {
        throw new Error('disk full');
      },
      info() {
        throw new Error('disk full');
      },
      warn() {
        throw new Error('disk full');
      },
      error() {
        throw new Error('disk full');
      },
    };
    const log = createKitLogger({ level: 'info', instance: broken, destination: undefined });
    expect(() => log.error({ storeId: 's' }, 'something failed')).not.toThrow();
  });
});

describe('a custom logger behind a real install', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sak-custom-logger-'));
  const target = recordingLogger();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      databaseUrl: join(dir, 'logger.db'),
      kit: { logger: { instance: target, level: 'trace' } },
    });
  });
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never receives a token, code, state, secret or authorization header', async () => {
    const browser = new Browser();
    const authorizeUrl = await begin(h, browser);
    const callbackUrl = h.platform.approveInstall({ authorizeUrl, storeId: h.storeId });
    const cb = await browser.get(callbackUrl);
    expect(cb.status).toBe(302);
    const inst = (await h.kit.installations.get(h.storeId))!;
    // An API call and a request carrying credentials in headers, logged at trace.
    await h.kit.client(h.storeId).products.list();
    h.kit.logger.trace(
      { req: { headers: { authorization: `Bearer ${inst.accessToken}` } }, code: 'leak?' },
      'incoming',
    );

    const installed = target.calls.find((c) => c.msg === 'store installed');
    expect(installed?.method).toBe('info');
    expect(installed?.obj).toMatchObject({ storeId: h.storeId, module: 'store-app-kit' });
    const incoming = target.calls.find((c) => c.msg === 'incoming');
    expect(incoming?.obj).toMatchObject({
      req: { headers: { authorization: '[redacted]' } },
      code: '[redacted]',
    });

    const url = new URL(callbackUrl);
    const secrets = [
      inst.accessToken,
      inst.refreshToken!,
      url.searchParams.get('code')!,
      url.searchParams.get('state')!,
      h.clientSecret,
      internalsOf(h.kit).config.webhooks.secrets[0]!,
      ...internalsOf(h.kit).config.session.secret,
      browser.cookies.get('store_app.sid')!.value,
    ];
    const text = JSON.stringify(target.calls);
    expect(target.calls.length).toBeGreaterThan(3);
    for (const s of secrets) {
      expect(s.length).toBeGreaterThan(10);
      expect(text).not.toContain(s);
    }
  });
});
