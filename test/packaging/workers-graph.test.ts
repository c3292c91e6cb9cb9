/**
 * `store-app-kit/workers` imports nothing a Worker lacks: its whole import
 * graph (with `store-app-kit/storage/d1` and `store-app-kit/hono`, what a
 * Worker imports beside it: templates/workers mounts the kit on Hono), bundled as Wrangler bundles a Worker, holds no `node:` module, no Node
 * built-in by its bare name, and no kit module that reaches for the `Buffer`
 * global. Checked on the built package (dist/, what `npm pack` ships and a
 * Worker's bundler reads).
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

let meta: Metafile;
beforeAll(async () => {
  const bundled = await build({
    stdin: {
      contents: `
        export { createWorker, storeApp } from './dist/workers/index.js';
        export { d1Adapter } from './dist/storage/d1/index.js';
        export { storeAppHono } from './dist/hono.js';`,
      resolveDir: root,
    },
    bundle: true,
    format: 'esm',
    // Wrangler's resolution for workerd; "neutral" adds no Node built-in as external.
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  meta = bundled.metafile;
}, 60_000);

/** Every import of the graph, static or dynamic, with the file importing it. */
const importsOf = () =>
  Object.entries(meta.inputs).flatMap(([file, input]) =>
    input.imports.map((i) => ({ file, path: i.original ?? i.path, kind: i.kind })),
  );

describe('store-app-kit/workers (and store-app-kit/hono) import graph', () => {
  it('holds no node: module and no Node built-in, statically or dynamically imported', () => {
    const kitFiles = Object.keys(meta.inputs).filter((f) => f.startsWith('dist/'));
    // The graph is the kit's: composition, shells, install, webhooks, refresh, purge, D1,
    // the Hono mount.
    for (const f of [
      'dist/workers/index.js',
      'dist/hono.js',
      'dist/shells/hono/index.js',
      'dist/compose/index.js',
      'dist/shells/fetch/index.js',
      'dist/install/callback.js',
      'dist/webhooks/pipeline.js',
      'dist/refresh/manager.js',
      'dist/purge/outbox.js',
      'dist/crypto/index.js',
      'dist/storage/d1/adapter.js',
    ]) {
      expect(kitFiles).toContain(f);
    }
    const node = importsOf().filter((i) => NODE_BUILTINS.has(i.path));
    expect(node).toEqual([]);
  });

  it('loads neither Hono, Express, pino, a database driver nor the built-in storage', () => {
    const files = Object.keys(meta.inputs);
    for (const pkg of [
      // store-app-kit/hono names Hono's types only: the app's own Hono is the one bundled.
      'hono',
      '@hono/node-server',
      'express',
      'express-session',
      'helmet',
      'pino',
      'pg',
      'mysql2',
      'better-sqlite3',
    ]) {
      expect(files.filter((f) => f.includes(`node_modules/${pkg}/`))).toEqual([]);
    }
    for (const f of ['dist/storage/index.js', 'dist/storage/adapter.js', 'dist/http/logger.js']) {
      expect(files).not.toContain(f);
    }
    // The Express shell's options schema (`securityHeaders`, read by the config) imports no Express.
    expect(files.filter((f) => f.startsWith('dist/shells/express/'))).toEqual([
      'dist/shells/express/options.js',
    ]);
  });

  it('no kit module in the graph uses the Buffer global (Workers have none)', () => {
    const users = Object.keys(meta.inputs)
      .filter((f) => f.startsWith('dist/'))
      .filter((f) => {
        const code = readFileSync(join(root, f), 'utf8')
          .replace(/\/\*[\s\S]*?\*\//g, '')
          .replace(/\/\/.*$/gm, '');
        // A free `Buffer` (not `globalThis.Buffer`, not a property named Buffer).
        return /(?<![.\w$])Buffer\b/.test(code);
      });
    expect(users).toEqual([]);
  });

  it('is a package entry with its types, and so is store-app-kit/hono', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.exports['./workers']).toEqual({
      types: './dist/workers/index.d.ts',
      default: './dist/workers/index.js',
    });
    expect(pkg.exports['./hono']).toEqual({
      types: './dist/hono.d.ts',
      default: './dist/hono.js',
    });
  });
});
