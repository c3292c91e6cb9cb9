/**
 * A template laid out as `create-store-app` lays it (the shared layer, then the
 * template's own files, by the scaffolder's `layTemplate`), linked to this
 * repository's built kit and compiled: what the template tests and the e2e
 * tests run. Each call gets its own directory under the gitignored
 * test-artifacts/, inside the repository so express, hono and drizzle-orm
 * resolve from the root node_modules.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { layTemplate } from '../../create-app/src/scaffold.js';
import { run } from './run.js';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

export type TemplateName = 'express' | 'hono' | 'react' | 'workers';

export interface LaidTemplate {
  /** The project directory (package.json, src/, test/, node_modules/store-app-kit). */
  dir: string;
  /** Its compiled `src/` (`dist/server.js`, `dist/dev.js`, …). */
  dist: string;
  remove(): void;
}

/**
 * Lays `template` into a fresh directory, links the built kit, and compiles it unless told
 * not to (the React template: its server, then its UI with Vite into dist/client, as its
 * `npm run build` does).
 */
export async function layOutTemplate(
  template: TemplateName,
  options: { compile?: boolean } = {},
): Promise<LaidTemplate> {
  if (!existsSync(join(root, 'dist', 'platform', 'index.js'))) {
    const build = await run(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root });
    if (build.status !== 0) throw new Error(`building the kit failed:\n${build.out}`);
  }
  const dir = join(
    root,
    'test-artifacts',
    'templates',
    `${template}-${randomBytes(4).toString('hex')}`,
  );
  mkdirSync(dir, { recursive: true });
  await layTemplate(join(root, 'templates'), template, dir);
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(root, join(dir, 'node_modules', 'store-app-kit'), 'dir');
  const laid: LaidTemplate = {
    dir,
    dist: join(dir, 'dist'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
  if (template === 'workers') {
    // What its `npm install` (postinstall: the kit's D1 migrations into migrations/) and
    // `npm test` (the page's assets bundled into src/generated/) do first; then no tsc
    // output: wrangler bundles the Worker, the tests bundle it with esbuild.
    for (const script of ['scripts/kit-migrations.mjs', 'scripts/build-assets.mjs']) {
      const r = await run(process.execPath, [join(dir, script)], { cwd: dir });
      if (r.status !== 0) throw new Error(`templates/workers ${script} failed:\n${r.out}`);
    }
    return laid;
  }
  if (options.compile ?? true) {
    const built = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.build.json')], {
      cwd: dir,
    });
    if (built.status !== 0)
      throw new Error(`compiling templates/${template} failed:\n${built.out}`);
    if (template === 'react') {
      const vite = await run(
        process.execPath,
        [join(root, 'node_modules/vite/bin/vite.js'), 'build'],
        {
          cwd: dir,
          timeout: 120_000,
        },
      );
      if (vite.status !== 0) throw new Error(`vite build of templates/react failed:\n${vite.out}`);
    }
  }
  return laid;
}
