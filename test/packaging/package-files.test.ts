/**
 * Nothing a demo, a test or a build writes can reach a package: the
 * create-store-app pack step refuses local state in templates/, and
 * check:package's file-list rules (scripts/package-files.js) reject anything
 * the tarballs are not meant to ship.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { committedFiles, packProblems } from '../../scripts/package-files.js';
import { run } from '../helpers/run.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const work = mkdtempSync(join(tmpdir(), 'sak-package-files-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const copyTemplates = join(root, 'create-app', 'scripts', 'copy-templates.js');
const committedTemplates = committedFiles(root, ['templates']);

/** A copy of the committed templates/ to pack from. */
function templatesCopy(name: string): string {
  const from = join(work, name);
  for (const f of committedTemplates) {
    mkdirSync(dirname(join(from, f)), { recursive: true });
    cpSync(join(root, f), join(from, f));
  }
  return join(from, 'templates');
}

describe('the create-store-app pack step (prepack copy of templates/)', () => {
  it("refuses a demo run's state in templates/ and names each file", async () => {
    const from = templatesCopy('dirty');
    mkdirSync(join(from, 'express', '.dev'));
    writeFileSync(join(from, 'express', '.dev', 'platform.db'), 'clients and secrets');
    writeFileSync(join(from, 'express', '.env'), 'STORE_APP_CLIENT_SECRET=s3cret');
    mkdirSync(join(from, 'express', 'data'));
    writeFileSync(join(from, 'express', 'data', 'app.db'), 'tokens');
    writeFileSync(join(from, 'express', 'notes.db-wal'), 'wal');
    const to = join(work, 'dirty-out');
    const r = await run(process.execPath, [copyTemplates, from, to], { cwd: root });
    expect(r.status).toBe(1);
    for (const p of ['express/.dev/', 'express/.env', 'express/data/', 'express/notes.db-wal']) {
      expect(r.stderr).toContain(p);
    }
    expect(r.stderr).not.toContain('s3cret');
    expect(existsSync(to)).toBe(false);
  });

  it("refuses a Worker's local state in templates/workers: .dev.vars, wrangler's .wrangler/", async () => {
    const from = templatesCopy('dirty-workers');
    writeFileSync(join(from, 'workers', '.dev.vars'), 'STORE_APP_CLIENT_SECRET=s3cret');
    mkdirSync(join(from, 'workers', '.wrangler', 'state'), { recursive: true });
    writeFileSync(join(from, 'workers', '.wrangler', 'state', 'db.sqlite'), 'tokens');
    const to = join(work, 'dirty-workers-out');
    const r = await run(process.execPath, [copyTemplates, from, to], { cwd: root });
    expect(r.status).toBe(1);
    for (const p of ['workers/.dev.vars', 'workers/.wrangler/']) expect(r.stderr).toContain(p);
    expect(r.stderr).not.toContain('s3cret');
    expect(existsSync(to)).toBe(false);
  });

  it('copies a clean templates/ without the build outputs the tests leave', async () => {
    const from = templatesCopy('clean');
    mkdirSync(join(from, 'express', 'node_modules', 'store-app-kit'), { recursive: true });
    mkdirSync(join(from, 'express', 'dist'));
    writeFileSync(join(from, 'express', 'dist', 'server.js'), '');
    // The Workers template's bundled page assets (scripts/build-assets.mjs) are a build output.
    mkdirSync(join(from, 'workers', 'src', 'generated'), { recursive: true });
    writeFileSync(join(from, 'workers', 'src', 'generated', 'assets.ts'), '');
    const to = join(work, 'clean-out');
    const r = await run(process.execPath, [copyTemplates, from, to], { cwd: root });
    expect(r.status, r.out).toBe(0);
    expect(existsSync(join(to, 'express', 'node_modules'))).toBe(false);
    expect(existsSync(join(to, 'express', 'dist'))).toBe(false);
    expect(existsSync(join(to, 'workers', 'src', 'generated'))).toBe(false);
    expect(existsSync(join(to, 'workers', 'src', 'index.ts'))).toBe(true);
    expect(readFileSync(join(to, 'express', 'package.json'), 'utf8')).toBe(
      readFileSync(join(root, 'templates', 'express', 'package.json'), 'utf8'),
    );
  });
});

describe('check:package file lists', () => {
  const creatorPkg = JSON.parse(readFileSync(join(root, 'create-app', 'package.json'), 'utf8'));
  const kitPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const creatorFiles = [
    'package.json',
    'README.md',
    'LICENSE',
    'dist/index.js',
    'dist/scaffold.js',
    ...committedTemplates,
  ];

  it('accept the create-store-app tarball as committed', () => {
    expect(
      packProblems('creator', {
        files: creatorFiles,
        committed: committedTemplates,
        pkg: creatorPkg,
      }),
    ).toEqual([]);
  });

  it('reject a demo database, a .env, a compiled template or a missing template file', () => {
    const problems = packProblems('creator', {
      files: [
        ...creatorFiles.filter((f) => f !== 'templates/express/src/app.ts'),
        'templates/express/.dev/platform.db',
        'templates/express/.env',
        'templates/express/dist/server.js',
        'dist/index.d.ts',
      ],
      committed: committedTemplates,
      pkg: creatorPkg,
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(
      [
        'dist/index.d.ts',
        'templates/express/.dev/platform.db',
        'templates/express/.env',
        'templates/express/dist/server.js',
        'templates/express/src/app.ts',
      ].sort(),
    );
  });

  it('reject source maps, sources and local state in the kit, and a missing export target', () => {
    const docs = committedFiles(root, ['docs', 'migrations']);
    const problems = packProblems('kit', {
      files: [
        'package.json',
        'README.md',
        'CHANGELOG.md',
        'LICENSE',
        ...docs,
        'dist/index.js',
        'dist/index.d.ts',
        'dist/index.js.map',
        'src/index.ts',
        'data/app.db',
      ],
      committed: docs,
      pkg: kitPkg,
    });
    expect(problems).toContain('dist/index.js.map: not expected in the kit tarball');
    expect(problems).toContain('src/index.ts: not expected in the kit tarball');
    expect(problems.some((p) => p.startsWith('data/app.db: local state'))).toBe(true);
    expect(problems).toContain('dist/platform/index.js: missing (named by package.json)');
  });
});
