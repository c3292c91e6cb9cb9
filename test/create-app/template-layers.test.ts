/**
 * Issue 31 item 8: the files the templates share live once, in
 * templates/_shared, laid down before each template's own files. What a user
 * gets is pinned: every scaffolded file and a hash of its bytes, per template,
 * in a checked listing (`__snapshots__/scaffolded-<template>.txt`, first
 * written from the scaffolder of main `b075d60`, before the layers existed).
 * A deliberate change to a template shows up there: refresh it with
 * `npx vitest run test/create-app/template-layers.test.ts -u` and review the diff.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listTemplates, SHARED_LAYER, scaffold } from '../../create-app/src/scaffold.js';
import { root } from '../helpers/template.js';

const templatesDir = join(root, 'templates');
const work = mkdtempSync(join(tmpdir(), 'template-layers-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string, skip: (name: string) => boolean = () => false): string[] {
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) => {
      if (skip(e.name)) return [];
      const path = join(d, e.name);
      return e.isDirectory() ? walk(path) : [relative(dir, path)];
    });
  return walk(dir).sort();
}

const sha = (file: string) =>
  createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);

/**
 * The scaffolded project as a listing: one line per file, its hash and path. `.env` (a
 * Worker's `.dev.vars`) holds fresh secrets on every run: its presence is listed, not its bytes.
 */
function listing(dir: string): string {
  return `${filesUnder(dir)
    .map(
      (f) => `${f === '.env' || f === '.dev.vars' ? '(fresh secrets)' : sha(join(dir, f))}  ${f}`,
    )
    .join('\n')}\n`;
}

const templates = await listTemplates(templatesDir);

it('offers the templates, not the shared layer', () => {
  expect(templates).toEqual(['express', 'hono', 'react', 'workers']);
});

describe.each(templates)('create-store-app --template %s', (template) => {
  it('writes the same project, byte for byte, as the checked listing', async () => {
    const { dir } = await scaffold({
      targetDir: join(work, template),
      template,
      templatesDir,
      install: false,
      git: false,
      env: {},
    });
    await expect(listing(dir)).toMatchFileSnapshot(`__snapshots__/scaffolded-${template}.txt`);
  });

  it('lists in its package.json every package its code imports (the shared layer included)', async () => {
    // A file of a shared layer can import a package one template's package.json forgot: this
    // repository's node_modules hides it, a scaffolded project's `npm run build` does not.
    const dir = join(work, `${template}-imports`);
    await scaffold({ targetDir: dir, template, templatesDir, install: false, git: false, env: {} });
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<
      'dependencies' | 'devDependencies',
      Record<string, string> | undefined
    >;
    const declared = new Set([
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.devDependencies ?? {}),
    ]);
    const missing = new Set<string>();
    for (const f of filesUnder(dir, (n) => n === 'node_modules')) {
      // public/ is the browser's (its one import is a URL of the app); scripts/ are Node's.
      if (!/\.(ts|tsx|mts|mjs)$/.test(f)) continue;
      const code = readFileSync(join(dir, f), 'utf8');
      for (const [, spec] of code.matchAll(/(?:from|import)\s*\(?\s*'([^'.][^']*)'/g)) {
        if (spec!.startsWith('node:') || spec!.startsWith('/')) continue;
        const name = spec!.startsWith('@')
          ? spec!.split('/').slice(0, 2).join('/')
          : spec!.split('/')[0]!;
        if (!declared.has(name)) missing.add(`${name} (${f})`);
      }
    }
    expect([...missing]).toEqual([]);
  });
});

describe('the shared layer', () => {
  const shared = filesUnder(join(templatesDir, SHARED_LAYER));
  const own = Object.fromEntries(
    templates.map((t) => [
      t,
      filesUnder(join(templatesDir, t), (n) => n === 'node_modules' || n === 'dist'),
    ]),
  );

  it('holds the files every template shares', () => {
    expect(shared).toEqual(expect.arrayContaining(['src/db/schema.ts', 'tsconfig.json']));
  });

  it('leaves the server-rendered page to the templates that render it (layer _page)', () => {
    const page = filesUnder(join(templatesDir, '_page'));
    expect(page).toEqual(['public/home.css', 'public/home.js', 'src/views/home.ts']);
    expect(shared).not.toContain('src/views/home.ts');
  });

  it('is never copied back into a template (a file equal to the shared one overrides nothing)', () => {
    for (const t of templates) {
      const copies = own[t]!.filter(
        (f) =>
          shared.includes(f) &&
          sha(join(templatesDir, t, f)) === sha(join(templatesDir, SHARED_LAYER, f)),
      );
      expect(copies, `templates/${t} repeats templates/${SHARED_LAYER}`).toEqual([]);
    }
  });

  it('takes every file that all templates would otherwise hold byte for byte', () => {
    const [first, ...rest] = templates;
    const same = own[first!]!.filter((f) =>
      rest.every(
        (t) =>
          own[t]!.includes(f) &&
          sha(join(templatesDir, t, f)) === sha(join(templatesDir, first!, f)),
      ),
    );
    expect(same, `move these to templates/${SHARED_LAYER}`).toEqual([]);
  });

  it("keeps the React template's styles the shared page's, but for their first comment", () => {
    // Vite imports them from web/ (web/main.tsx), where the page templates serve
    // public/home.css: one file in two places, so this holds them together instead.
    const body = (file: string) => readFileSync(file, 'utf8').split('\n').slice(1).join('\n');
    expect(body(join(templatesDir, 'react', 'web', 'styles.css'))).toBe(
      body(join(templatesDir, '_page', 'public', 'home.css')),
    );
  });
});

describe('the Workers template', () => {
  it('runs in workerd without nodejs_compat: the Worker’s code (src/, the _page layer’s view included) imports no Node module', async () => {
    const dir = join(work, 'workers-runtime');
    await scaffold({
      targetDir: dir,
      template: 'workers',
      templatesDir,
      install: false,
      git: false,
      env: {},
    });
    const wrangler = readFileSync(join(dir, 'wrangler.toml'), 'utf8');
    expect(wrangler).not.toMatch(/^compatibility_flags/m);
    const offenders = filesUnder(join(dir, 'src'))
      .filter((f) => /\.ts$/.test(f))
      .filter((f) =>
        /from\s+'node:|require\(|\bprocess\.env\b|\bBuffer\./.test(
          readFileSync(join(dir, 'src', f), 'utf8'),
        ),
      );
    expect(offenders).toEqual([]);
  });
});
