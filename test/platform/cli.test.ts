import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/platform/cli-run.js';
import { type Platform, startPlatform } from '../../src/platform/index.js';
import { install, postToken, REDIRECT } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'store-platform-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  let stop!: () => void;
  const stopped = new Promise<void>((r) => {
    stop = r;
  });
  let started: Platform | undefined;
  const done = runCli(argv, {
    stdout: (t) => {
      out += t;
    },
    stderr: (t) => {
      err += t;
    },
    stopped,
    env,
    onStarted: (p) => {
      started = p;
    },
  });
  return { done, stop, out: () => out, err: () => err, platform: () => started };
}

describe('store-platform CLI', () => {
  it('--help prints usage and exits 0', async () => {
    const r = run(['--help']);
    expect(await r.done).toBe(0);
    expect(r.out()).toContain('--seed');
  });

  it('refuses unknown flags and bad values with exit code 2', async () => {
    for (const argv of [['--nope'], ['--tier', 'gold'], ['--port']]) {
      const r = run(argv);
      expect(await r.done).toBe(2);
      expect(r.err()).toContain('Usage');
    }
  });

  it('a mistyped flag or variable suggests the right one (exit 2)', async () => {
    for (const [argv, env, says] of [
      [['--prot', '0'], {}, 'unknown option --prot; did you mean --port?'],
      [['--revoke-on-code-reply'], {}, 'did you mean --revoke-on-code-replay?'],
      [
        ['--port', '0'],
        { STORE_PLATFORM_PROT: '4400' },
        'STORE_PLATFORM_PROT: is not a setting of store-platform; did you mean STORE_PLATFORM_PORT?',
      ],
    ] as const) {
      const r = run([...argv], { ...env });
      expect(await r.done).toBe(2);
      expect(r.err()).toContain(says);
      expect(r.platform()).toBeUndefined();
    }
  });

  it('a bad value is named by the flag or variable it came from, with what to put there (exit 2)', async () => {
    for (const [argv, env, line] of [
      [['--port', 'x'], {}, 'store-platform: --port: must be an integer from 0 to 65535.'],
      [
        [],
        { STORE_PLATFORM_PORT: '99999' },
        'store-platform: STORE_PLATFORM_PORT: must be an integer from 0 to 65535.',
      ],
      [
        ['--port', '0', '--allowed-host', 'http://devbox'],
        {},
        'store-platform: --allowed-host: must be a host name (no scheme, no port), e.g. devbox.local.',
      ],
      [
        ['--port', '0'],
        { STORE_PLATFORM_REVOKE_ON_CODE_REPLAY: 'maybe' },
        'store-platform: STORE_PLATFORM_REVOKE_ON_CODE_REPLAY: must be true or false.',
      ],
    ] as const) {
      const r = run([...argv], { ...env });
      expect(await r.done).toBe(2);
      expect(r.err().trim()).toBe(line);
    }
  });

  it('a flag wins over its variable', async () => {
    // STORE_PLATFORM_PORT would be refused; the flag replaces it before validation.
    const r = run(['--port', '0'], { STORE_PLATFORM_PORT: 'not-a-port' });
    await expect.poll(() => r.platform(), { timeout: 15_000 }).toBeDefined();
    r.stop();
    expect(await r.done).toBe(0);
  });

  it.each([
    ['--revoke-on-code-replay', 401, ['--revoke-on-code-replay'], {}],
    [
      'STORE_PLATFORM_REVOKE_ON_CODE_REPLAY=true',
      401,
      [],
      { STORE_PLATFORM_REVOKE_ON_CODE_REPLAY: 'true' },
    ],
    ['neither (the document: tokens unchanged)', 200, [], {}],
  ] as const)(
    'code replay with %s: the first access token answers %i',
    async (_label, status, flags, env) => {
      const r = run(['--port', '0', ...flags], { ...env });
      await expect.poll(() => r.platform(), { timeout: 15_000 }).toBeDefined();
      const platform = r.platform()!;
      try {
        const inst = await install(platform);
        const again = await postToken(platform, {
          grant_type: 'authorization_code',
          client_id: inst.clientId,
          client_secret: inst.clientSecret,
          code: inst.code,
          redirect_uri: REDIRECT,
          code_verifier: inst.verifier,
        });
        expect(again.body['error']).toBe('invalid_grant');
        const res = await fetch(`${platform.apiUrl}/stores/current`, {
          headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
        });
        expect(res.status).toBe(status);
      } finally {
        r.stop();
        expect(await r.done).toBe(0);
      }
    },
  );

  it('starts fast, seeds, registers --app with fixed credentials and prints them', async () => {
    const appFile = join(dir, 'app.json');
    writeFileSync(
      appFile,
      JSON.stringify({
        name: 'CLI app',
        redirectUri: 'http://localhost:3000/auth/callback',
        webhookUrl: 'http://localhost:3000/webhooks',
        scopes: ['read_products'],
        clientId: 'app_cli_fixed',
        clientSecret: 'cli-fixed-secret-0123456789',
      }),
    );
    // Start-up time is a bench figure (`npm run bench -- platform`), not asserted here.
    const r = run(['--port', '0', '--seed', '3', '--tier', 'partner', '--app', appFile]);
    await expect.poll(() => r.platform(), { timeout: 15_000 }).toBeDefined();
    const out = r.out();
    expect(out).toMatch(/running at http:\/\/127\.0\.0\.1:\d+/);
    expect(out).toContain('STORE_APP_CLIENT_ID=app_cli_fixed');
    expect(out).toContain('STORE_APP_CLIENT_SECRET=cli-fixed-secret-0123456789');
    expect(out).toMatch(/STORE_APP_WEBHOOK_SECRET=whsec_/);
    expect(out).toMatch(/Seeded store "Dev Store": [0-9a-f-]{36}/);
    const res = await fetch(`${r.platform()!.url}/dashboard/apps/app_cli_fixed`);
    expect(await res.text()).toContain('partner');
    r.stop();
    expect(await r.done).toBe(0);
  });

  it('exits 1 with a message for an invalid app config', async () => {
    const appFile = join(dir, 'bad.json');
    writeFileSync(
      appFile,
      JSON.stringify({
        name: 'Bad',
        redirectUri: 'http://example.com/cb',
        webhookUrl: 'x',
        scopes: [],
      }),
    );
    const r = run(['--port', '0', '--app', appFile]);
    expect(await r.done).toBe(1);
    expect(r.err()).toContain('redirectUri');
  });
});

describe('--faults file', () => {
  it('starts with the faults of the file in force', async () => {
    const file = join(dir, 'faults.json');
    writeFileSync(file, JSON.stringify({ api: { errorRate: 1, errorStatus: 503 } }));
    const r = run(['--port', '0', '--seed', '3', '--faults', file]);
    await vi.waitFor(() => expect(r.platform()).toBeDefined(), { timeout: 15_000 });
    const platform = r.platform()!;
    const inst = await install(platform);
    const res = await fetch(`${platform.apiUrl}/stores/current`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
    });
    expect(res.status).toBe(503);
    expect(platform.faultStats().errors).toBe(1);
    r.stop();
    expect(await r.done).toBe(0);
  });

  it('exits 2 naming the problem for an unreadable file or an invalid fault', async () => {
    const bad = join(dir, 'bad-faults.json');
    writeFileSync(bad, JSON.stringify({ api: { errorRate: 2 } }));
    for (const [argv, says] of [
      [['--port', '0', '--faults', join(dir, 'missing.json')], '--faults'],
      [
        ['--port', '0', '--faults', bad],
        `--faults ${bad}: faults.api.errorRate: must be a number from 0 to 1`,
      ],
    ] as const) {
      const r = run([...argv]);
      expect(await r.done).toBe(2);
      expect(r.err()).toContain(says);
    }
  });
});

describe('--db file', () => {
  it('a restart with --db, --seed and the same --app keeps the app and reuses the seeded store', async () => {
    const file = join(dir, 'restart.db');
    const appFile = join(dir, 'restart-app.json');
    const app = {
      name: 'Restarted app',
      redirectUri: 'http://localhost:3000/auth/callback',
      webhookUrl: 'http://localhost:3000/webhooks',
      scopes: ['read_products'],
      clientId: 'app_cli_restart',
      clientSecret: 'cli-restart-secret-0123456789',
    };
    writeFileSync(appFile, JSON.stringify(app));
    const argv = ['--port', '0', '--seed', '3', '--db', file, '--app', appFile];
    const first = run(argv);
    await expect.poll(() => first.platform(), { timeout: 15_000 }).toBeDefined();
    const storeId = /Seeded store "Dev Store": ([0-9a-f-]{36})/.exec(first.out())?.[1];
    expect(storeId).toBeTruthy();
    const inst = await install(first.platform()!, { storeId: storeId! });
    first.stop();
    expect(await first.done).toBe(0);

    const second = run(argv);
    await expect.poll(() => second.platform(), { timeout: 15_000 }).toBeDefined();
    expect(second.err()).toBe('');
    expect(second.out()).toContain(`Store "Dev Store" (kept in ${file}): ${storeId}`);
    expect(second.platform()!.listStores()).toHaveLength(1);
    const res = await fetch(`${second.platform()!.apiUrl}/products`, {
      headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': storeId! },
    });
    expect(res.status).toBe(200);
    second.stop();
    expect(await second.done).toBe(0);

    // Another secret for the same client id: refused at start, the secret not echoed.
    writeFileSync(appFile, JSON.stringify({ ...app, clientSecret: 'another-secret-0123456789' }));
    const third = run(argv);
    expect(await third.done).toBe(1);
    expect(third.err()).toContain('same clientSecret');
    expect(third.err()).not.toContain('another-secret-0123456789');
    // Code and message, one line (issue 32 item 9).
    expect(third.err().trim().split('\n')).toHaveLength(1);
    expect(third.err()).toMatch(/^store-platform: PLATFORM_APP_EXISTS: registerApp: clientId /);
  });

  it('keeps apps, stores and tokens across restarts', async () => {
    const file = join(dir, 'platform.db');
    const first = await startPlatform({ db: file });
    const inst = await install(first);
    await first.close();
    const second = await startPlatform({ db: file });
    try {
      const res = await fetch(`${second.apiUrl}/stores/current`, {
        headers: { authorization: `Bearer ${inst.accessToken}`, 'x-store-id': inst.storeId },
      });
      expect(res.status).toBe(200);
      const page = await fetch(`${second.url}/dashboard/apps/${inst.clientId}`);
      expect(page.status).toBe(200);
    } finally {
      await second.close();
    }
  });
});
