import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main, type Prompts } from '../../create-app/src/cli.js';
import {
  INVALID_NAME,
  SCAFFOLD_FAILED,
  TARGET_NOT_EMPTY,
  UNKNOWN_TEMPLATE,
} from '../../create-app/src/errors.js';
import { detectPackageManager, kitSpecFrom, scaffold } from '../../create-app/src/scaffold.js';
import { parseEnv } from '../../create-app/src/secrets.js';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'create-store-app-'));
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

/** Runs the CLI in-process as a non-TTY caller (CI, pipes) would. */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  const code = await main(args, {
    stdout: (t) => {
      out += t;
    },
    stderr: (t) => {
      err += t;
    },
    isTTY: false,
    env,
    cwd: work,
  });
  return { code, out, err };
}

async function expectCode(promise: Promise<unknown>, code: string) {
  await expect(promise).rejects.toMatchObject({ code });
}

describe('scaffold', () => {
  it('writes a complete project: renamed .gitignore, package name, kit spec, env files', async () => {
    const r = await scaffold({ targetDir: 'shop-notes', cwd: work, git: false, kit: '^9.9.9' });
    const dir = join(work, 'shop-notes');
    expect(r.dir).toBe(dir);
    expect(existsSync(join(dir, '.gitignore'))).toBe(true);
    expect(existsSync(join(dir, '_gitignore'))).toBe(false);
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toMatch(/^\.env$/m);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('shop-notes');
    expect(pkg.dependencies['store-app-kit']).toBe('^9.9.9');
    for (const script of ['dev', 'start', 'test', 'build', 'migrate'])
      expect(pkg.scripts[script]).toBeTruthy();
    expect(existsSync(join(dir, 'src', 'app.ts'))).toBe(true);
    expect(existsSync(join(dir, 'node_modules'))).toBe(false);
    expect(existsSync(join(dir, 'dist'))).toBe(false);
    // Nothing but the project is left in the parent (no temp or backup directory).
    expect(readdirSync(work)).toEqual(['shop-notes']);
  });

  it('writes fresh, valid secrets into .env and only placeholders into .env.example', async () => {
    await scaffold({ targetDir: 'a', cwd: work, git: false });
    await scaffold({ targetDir: 'b', cwd: work, git: false });
    const a = parseEnv(readFileSync(join(work, 'a', '.env'), 'utf8'));
    const b = parseEnv(readFileSync(join(work, 'b', '.env'), 'utf8'));
    const key = Buffer.from(a['STORE_APP_ENCRYPTION_KEYS']!, 'base64url');
    expect(key.length).toBe(32);
    expect(a['STORE_APP_ENCRYPTION_KEYS']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a['STORE_APP_SESSION_SECRET']!.length).toBeGreaterThanOrEqual(32);
    expect(a['STORE_APP_CLIENT_ID']).toMatch(/^app_[0-9a-f]+$/);
    expect(Buffer.from(a['STORE_APP_CLIENT_SECRET']!, 'base64url').length).toBe(32);
    expect(a['STORE_APP_WEBHOOK_SECRET']).toMatch(/^whsec_/);
    expect(Buffer.from(a['STORE_APP_WEBHOOK_SECRET']!.slice(6), 'base64').length).toBe(32);
    for (const k of [
      'STORE_APP_ENCRYPTION_KEYS',
      'STORE_APP_SESSION_SECRET',
      'STORE_APP_CLIENT_ID',
      'STORE_APP_CLIENT_SECRET',
      'STORE_APP_WEBHOOK_SECRET',
    ]) {
      expect(a[k], k).not.toBe(b[k]);
    }
    expect(a['DATABASE_URL']).toBe('./data/app.db');
    expect(statSync(join(work, 'a', '.env')).mode & 0o077).toBe(0);

    const exampleText = readFileSync(join(work, 'a', '.env.example'), 'utf8');
    const example = parseEnv(exampleText);
    expect(Object.keys(example).sort()).toEqual(Object.keys(a).sort());
    for (const k of [
      'STORE_APP_ENCRYPTION_KEYS',
      'STORE_APP_SESSION_SECRET',
      'STORE_APP_CLIENT_SECRET',
    ]) {
      expect(exampleText).not.toContain(a[k]!);
    }
    expect(exampleText).toMatch(/^# .*postgres/im);
  });

  it('makes a first git commit with the project files and without .env', async () => {
    const r = await scaffold({ targetDir: 'with-git', cwd: work, git: true });
    expect(r.gitCommitted).toBe(true);
    const dir = join(work, 'with-git');
    const log = spawnSync('git', ['log', '--oneline'], { cwd: dir, encoding: 'utf8' });
    expect(log.stdout.trim().split('\n')).toHaveLength(1);
    const files = spawnSync('git', ['ls-files'], { cwd: dir, encoding: 'utf8' }).stdout.split('\n');
    expect(files).toContain('package.json');
    expect(files).toContain('.gitignore');
    expect(files).toContain('.env.example');
    expect(files).not.toContain('.env');
  });

  it('commits after the install, so the first commit holds the lockfile', async () => {
    // A stand-in npm that writes a lockfile the way `npm install` does.
    const bin = mkdtempSync(join(tmpdir(), 'pm-bin-'));
    writeFileSync(
      join(bin, 'npm'),
      '#!/bin/sh\necho \'{"lockfileVersion":3}\' > package-lock.json\n',
      {
        mode: 0o755,
      },
    );
    const r = await scaffold({
      targetDir: 'locked',
      cwd: work,
      git: true,
      install: true,
      env: { ...process.env, PATH: `${bin}:${process.env['PATH']}` },
    });
    expect(r.installed).toBe(true);
    expect(r.gitCommitted).toBe(true);
    const dir = join(work, 'locked');
    const files = spawnSync('git', ['ls-files'], { cwd: dir, encoding: 'utf8' }).stdout.split('\n');
    expect(files).toContain('package-lock.json');
    expect(spawnSync('git', ['status', '--porcelain'], { cwd: dir, encoding: 'utf8' }).stdout).toBe(
      '',
    );
  });

  it('allows better-sqlite3 to build under pnpm (allowBuilds), yarn and bun', async () => {
    await scaffold({ targetDir: 'p', cwd: work, git: false, packageManager: 'pnpm' });
    expect(readFileSync(join(work, 'p', 'pnpm-workspace.yaml'), 'utf8')).toMatch(
      /^allowBuilds:\n(?:.*\n)* {2}better-sqlite3: true$/m,
    );
    await scaffold({ targetDir: 'y', cwd: work, git: false, packageManager: 'yarn' });
    const y = JSON.parse(readFileSync(join(work, 'y', 'package.json'), 'utf8'));
    expect(y.dependenciesMeta['better-sqlite3']).toEqual({ built: true });
    await scaffold({ targetDir: 'n', cwd: work, git: false, packageManager: 'npm' });
    expect(existsSync(join(work, 'n', 'pnpm-workspace.yaml'))).toBe(false);
    expect(existsSync(join(work, 'n', 'README.md'))).toBe(true);
  });

  it('refuses invalid package names and writes nothing', async () => {
    for (const name of ['My App', '.hidden', 'node_modules', 'a'.repeat(215), 'UPPER']) {
      await expectCode(scaffold({ targetDir: 'x', name, cwd: work, git: false }), INVALID_NAME);
    }
    await expectCode(scaffold({ targetDir: 'Bad Name', cwd: work, git: false }), INVALID_NAME);
    expect(readdirSync(work)).toEqual([]);
  });

  it('refuses a non-empty directory, keeps it intact, and replaces it with force', async () => {
    const dir = join(work, 'taken');
    mkdirSync(dir);
    writeFileSync(join(dir, 'keep.txt'), 'mine');
    await expectCode(scaffold({ targetDir: 'taken', cwd: work, git: false }), TARGET_NOT_EMPTY);
    expect(readdirSync(dir)).toEqual(['keep.txt']);

    await scaffold({ targetDir: 'taken', cwd: work, git: false, force: true });
    expect(existsSync(join(dir, 'keep.txt'))).toBe(false);
    expect(existsSync(join(dir, 'package.json'))).toBe(true);
    expect(readdirSync(work)).toEqual(['taken']);
  });

  it('accepts an existing empty directory', async () => {
    mkdirSync(join(work, 'empty'));
    await scaffold({ targetDir: 'empty', cwd: work, git: false });
    expect(existsSync(join(work, 'empty', 'package.json'))).toBe(true);
  });

  it('leaves nothing behind when it fails part-way', async () => {
    const failing = scaffold({
      targetDir: 'broken',
      cwd: work,
      git: true,
      beforeCommit: () => {
        throw new Error('disk full');
      },
    });
    await expectCode(failing, SCAFFOLD_FAILED);
    expect(readdirSync(work)).toEqual([]);
  });

  it('keeps the old directory when a forced replace fails part-way', async () => {
    const dir = join(work, 'old');
    mkdirSync(dir);
    writeFileSync(join(dir, 'keep.txt'), 'mine');
    const failing = scaffold({
      targetDir: 'old',
      cwd: work,
      git: false,
      force: true,
      beforeCommit: () => {
        throw new Error('boom');
      },
    });
    await expectCode(failing, SCAFFOLD_FAILED);
    expect(readdirSync(work)).toEqual(['old']);
    expect(readFileSync(join(dir, 'keep.txt'), 'utf8')).toBe('mine');
  });

  it('refuses an unknown template', async () => {
    await expectCode(
      scaffold({ targetDir: 'x', template: 'nope', cwd: work, git: false }),
      UNKNOWN_TEMPLATE,
    );
    expect(readdirSync(work)).toEqual([]);
  });

  it('detects the package manager from npm_config_user_agent', () => {
    expect(
      detectPackageManager({ npm_config_user_agent: 'pnpm/9.1.0 npm/? node/v20.19.0 linux x64' }),
    ).toBe('pnpm');
    expect(detectPackageManager({ npm_config_user_agent: 'yarn/4.1.0 npm/? node/v20.19.0' })).toBe(
      'yarn',
    );
    expect(detectPackageManager({ npm_config_user_agent: 'bun/1.1.0 npm/? node/v20' })).toBe('bun');
    expect(detectPackageManager({ npm_config_user_agent: 'npm/10.8.2 node/v20.19.0' })).toBe('npm');
    expect(detectPackageManager({})).toBe('npm');
  });

  it('carries a packed kit inside the project: vendor/<tarball>, referenced as file:vendor/…', async () => {
    const tarball = join(work, 'packs', 'store-app-kit-9.9.9.tgz');
    mkdirSync(dirname(tarball), { recursive: true });
    writeFileSync(tarball, 'not really a tarball, but bytes to carry');
    await scaffold({
      targetDir: 'vendored',
      cwd: work,
      git: false,
      kit: 'packs/store-app-kit-9.9.9.tgz',
    });
    const dir = join(work, 'vendored');
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    // A relative reference: the project installs wherever it is copied or cloned.
    expect(pkg.dependencies['store-app-kit']).toBe('file:vendor/store-app-kit-9.9.9.tgz');
    expect(readFileSync(join(dir, 'vendor', 'store-app-kit-9.9.9.tgz'), 'utf8')).toBe(
      'not really a tarball, but bytes to carry',
    );
    // What the README says about it is true, and it links no registry page.
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    expect(readme).toContain('file:vendor/store-app-kit-<version>.tgz');
    expect(readme).not.toMatch(/npmjs\.(com|org)/);
    // A tarball that is not there fails before anything is written.
    await expectCode(
      scaffold({ targetDir: 'no-kit', cwd: work, git: false, kit: 'packs/missing.tgz' }),
      'INVALID_ARGUMENT',
    );
    expect(existsSync(join(work, 'no-kit'))).toBe(false);
  });

  it.each(['express', 'hono'])('the %s README links no registry page', async (template) => {
    await scaffold({ targetDir: template, template, cwd: work, git: false, kit: '^9.9.9' });
    const readme = readFileSync(join(work, template, 'README.md'), 'utf8');
    expect(readme).not.toMatch(/npmjs\.(com|org)/);
    expect(readme).toContain('node_modules/store-app-kit/README.md');
  });

  it('points the kit at a packed tarball given by flag or environment', () => {
    expect(kitSpecFrom('../kit.tgz', {}, '/home/me')).toBe('file:/home/kit.tgz');
    expect(kitSpecFrom(undefined, { CREATE_STORE_APP_KIT_SPEC: '/tmp/k.tgz' }, '/')).toBe(
      'file:/tmp/k.tgz',
    );
    expect(kitSpecFrom(undefined, {}, '/')).toMatch(/^\^\d+\.\d+\.\d+/);
  });
});

describe('create-store-app CLI without a terminal', () => {
  it('never prompts, takes every choice from flags, and prints the next steps', async () => {
    const r = await cli(['my-app', '--no-install', '--no-git', '--pm', 'pnpm']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(existsSync(join(work, 'my-app', 'package.json'))).toBe(true);
    expect(existsSync(join(work, 'my-app', '.git'))).toBe(false);
    expect(r.out).toContain('cd my-app');
    expect(r.out).toContain('pnpm install');
    expect(r.out).toContain('pnpm dev');
  });

  it('writes the Hono app with --template hono, and Express by default', async () => {
    const hono = await cli(['hono-app', '--template', 'hono', '--no-install', '--no-git']);
    expect(hono.code, hono.err).toBe(0);
    const dir = join(work, 'hono-app');
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('hono-app');
    expect(Object.keys(pkg.dependencies)).toEqual(
      expect.arrayContaining(['hono', '@hono/node-server', 'store-app-kit']),
    );
    expect(pkg.dependencies['express']).toBeUndefined();
    expect(readFileSync(join(dir, 'src', 'app.ts'), 'utf8')).toContain(
      "app.use('*', hono.middleware())",
    );
    expect(existsSync(join(dir, '.gitignore'))).toBe(true);
    expect(parseEnv(readFileSync(join(dir, '.env'), 'utf8'))['STORE_APP_CLIENT_ID']).toMatch(
      /^app_/,
    );
    expect(hono.out).toContain('npm run dev');

    const plain = await cli(['plain-app', '--no-install', '--no-git']);
    expect(plain.code, plain.err).toBe(0);
    const express = JSON.parse(readFileSync(join(work, 'plain-app', 'package.json'), 'utf8'));
    expect(express.dependencies['express']).toBeTruthy();
    expect(express.dependencies['hono']).toBeUndefined();
  });

  it('writes the Workers app with --template workers: wrangler.toml, D1 migrations, .dev.vars', async () => {
    const r = await cli(['edge-app', '--template', 'workers', '--no-install', '--no-git']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('npm run deploy');
    const dir = join(work, 'edge-app');
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['drizzle-orm', 'hono', 'store-app-kit']);
    // workerd comes from npm with miniflare and wrangler; better-sqlite3 is the local
    // platform's (dev and tests, on Node), never the Worker's.
    expect(Object.keys(pkg.devDependencies)).toEqual(
      expect.arrayContaining(['miniflare', 'wrangler', 'better-sqlite3']),
    );
    for (const nodeOnly of ['better-sqlite3', '@hono/node-server', 'express'])
      expect(pkg.dependencies[nodeOnly], nodeOnly).toBeUndefined();
    for (const script of ['dev', 'build', 'typecheck', 'test', 'deploy', 'db:migrate:remote'])
      expect(pkg.scripts[script], script).toBeTruthy();
    const wrangler = readFileSync(join(dir, 'wrangler.toml'), 'utf8');
    expect(wrangler).toMatch(/^binding = "DB"$/m);
    expect(wrangler).toMatch(/^migrations_dir = "migrations"$/m);
    expect(wrangler).toMatch(/^crons = \[".+"\]$/m);
    expect(existsSync(join(dir, 'migrations', '0100_product_notes.sql'))).toBe(true);
    // wrangler's local settings file, not .env: fresh secrets, no Node-only settings.
    expect(existsSync(join(dir, '.env'))).toBe(false);
    const vars = parseEnv(readFileSync(join(dir, '.dev.vars'), 'utf8'));
    expect(vars['STORE_APP_CLIENT_ID']).toMatch(/^app_/);
    expect(Buffer.from(vars['STORE_APP_ENCRYPTION_KEYS']!, 'base64url').length).toBe(32);
    expect(vars['DATABASE_URL']).toBeUndefined();
    expect(vars['PORT']).toBeUndefined();
    expect(statSync(join(dir, '.dev.vars')).mode & 0o077).toBe(0);
    const example = readFileSync(join(dir, '.dev.vars.example'), 'utf8');
    expect(Object.keys(parseEnv(example)).sort()).toEqual(Object.keys(vars).sort());
    expect(example).not.toContain(vars['STORE_APP_CLIENT_SECRET']!);
    const ignored = readFileSync(join(dir, '.gitignore'), 'utf8');
    for (const line of ['.dev.vars', '.wrangler/', 'src/generated/'])
      expect(ignored).toMatch(new RegExp(`^${line.replaceAll('.', '\\.')}$`, 'm'));
    // The page's browser half is the shared one, without its Node-only folder lookup.
    expect(existsSync(join(dir, 'public', 'home.js'))).toBe(true);
    expect(readFileSync(join(dir, 'src', 'views', 'home.ts'), 'utf8')).not.toContain('node:');
  });

  it('refuses an unknown --template with a usage error naming the templates, before writing', async () => {
    const r = await cli(['x', '--template', 'worker', '--no-install', '--no-git']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('express, hono, react, workers');
    expect(readdirSync(work)).toEqual([]);
  });

  it('uses the package manager that ran it when --pm is absent', async () => {
    const r = await cli(['y-app', '--no-install', '--no-git'], {
      npm_config_user_agent: 'yarn/4.0.0 node/v20',
    });
    expect(r.code).toBe(0);
    expect(r.out).toContain('yarn dev');
  });

  it('requires a directory when it cannot prompt', async () => {
    const r = await cli(['--no-install']);
    expect(r.code).toBe(2);
    expect(readdirSync(work)).toEqual([]);
  });

  it('rejects unknown flags and package managers with usage errors', async () => {
    expect((await cli(['x', '--pm', 'pip'])).code).toBe(2);
    expect((await cli(['x', '--frobnicate'])).code).toBe(2);
    expect(readdirSync(work)).toEqual([]);
  });

  it('refuses a non-empty directory unless --force', async () => {
    mkdirSync(join(work, 'busy'));
    writeFileSync(join(work, 'busy', 'x'), '');
    const refused = await cli(['busy', '--no-install', '--no-git']);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('--force');
    const forced = await cli(['busy', '--no-install', '--no-git', '--force', '--yes']);
    expect(forced.code).toBe(0);
    expect(existsSync(join(work, 'busy', 'package.json'))).toBe(true);
  });

  it('prints help', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    for (const flag of ['--template', '--pm', '--no-install', '--no-git', '--yes', '--force']) {
      expect(r.out).toContain(flag);
    }
    expect(readdirSync(work)).toEqual([]);
  });
});

describe('create-store-app CLI in a terminal', () => {
  const CANCEL = Symbol('cancel');

  /** Scripted answers in prompt order; records every question asked and the choices offered. */
  function scripted(answers: unknown[]) {
    const asked: string[] = [];
    const offered: Record<string, unknown[]> = {};
    const next = async (o: { message: string; options?: Array<{ value: unknown }> }) => {
      asked.push(o.message);
      if (o.options) offered[o.message] = o.options.map((x) => x.value);
      return answers.shift() as never;
    };
    const prompts: Prompts = {
      intro: () => {},
      outro: () => {},
      isCancel: ((v: unknown) => v === CANCEL) as unknown as Prompts['isCancel'],
      text: next as Prompts['text'],
      select: next as Prompts['select'],
      confirm: next as Prompts['confirm'],
    };
    return { prompts, asked, offered };
  }

  /** A PATH holding only stand-ins for the given package managers (each answers --version). */
  function pathWith(...pms: string[]): string {
    const bin = mkdtempSync(join(tmpdir(), 'pm-bin-'));
    for (const pm of pms) {
      writeFileSync(join(bin, pm), '#!/bin/sh\necho 1.0.0\n', { mode: 0o755 });
    }
    return bin;
  }

  async function tty(
    args: string[],
    prompts: Prompts,
    env: NodeJS.ProcessEnv = { PATH: pathWith('npm', 'pnpm') },
  ) {
    let err = '';
    const code = await main(args, {
      stdout: () => {},
      stderr: (t) => {
        err += t;
      },
      isTTY: true,
      env,
      cwd: work,
      prompts,
    });
    return { code, err };
  }

  it('asks for name, package manager, install and git, and uses the answers', async () => {
    const { prompts, asked, offered } = scripted(['asked-app', 'hono', 'pnpm', false, false]);
    const r = await tty([], prompts);
    expect(r.code, r.err).toBe(0);
    expect(offered['Template']).toEqual(['express', 'hono', 'react', 'workers']);
    expect(asked).toEqual([
      'Project name',
      'Template',
      'Package manager',
      'Install dependencies?',
      'Initialise a git repository?',
    ]);
    expect(existsSync(join(work, 'asked-app', 'package.json'))).toBe(true);
    expect(existsSync(join(work, 'asked-app', '.git'))).toBe(false);
    const pkg = JSON.parse(readFileSync(join(work, 'asked-app', 'package.json'), 'utf8'));
    expect(pkg.dependencies['hono']).toBeTruthy();
  });

  it('offers only the package managers installed on this machine', async () => {
    const { prompts, offered } = scripted(['only-installed', 'express', 'bun', false, false]);
    const r = await tty([], prompts, { PATH: pathWith('npm', 'bun') });
    expect(r.code, r.err).toBe(0);
    expect(offered['Package manager']).toEqual(['npm', 'bun']);
    expect(
      JSON.parse(readFileSync(join(work, 'only-installed', 'package.json'), 'utf8'))
        .trustedDependencies,
    ).toContain('better-sqlite3');
  });

  it('refuses to install with a package manager that is not installed', async () => {
    const { prompts } = scripted([]);
    const r = await tty(['no-pnpm', '--pm', 'pnpm', '--yes'], prompts, { PATH: pathWith('npm') });
    expect(r.code).toBe(2);
    expect(r.err).toContain('pnpm is not installed');
    expect(existsSync(join(work, 'no-pnpm'))).toBe(false);
  });

  it('asks only what the flags leave open', async () => {
    const { prompts, asked } = scripted([true]);
    const r = await tty(
      ['flagged', '--template', 'express', '--pm', 'npm', '--no-install'],
      prompts,
    );
    expect(r.code, r.err).toBe(0);
    expect(asked).toEqual(['Initialise a git repository?']);
    expect(existsSync(join(work, 'flagged', '.git'))).toBe(true);
  });

  it('never asks with --yes', async () => {
    const { prompts, asked } = scripted([]);
    const r = await tty(['quiet', '--yes', '--no-install', '--no-git'], prompts);
    expect(r.code, r.err).toBe(0);
    expect(asked).toEqual([]);
  });

  it('writes nothing when the user cancels', async () => {
    const { prompts } = scripted(['cancelled-app', 'express', 'npm', CANCEL]);
    const r = await tty([], prompts);
    expect(r.code).toBe(1);
    expect(readdirSync(work)).toEqual([]);
  });
});
