#!/usr/bin/env node
// `npm run check:package`: the kit as a user gets it from the registry.
// Packs the kit (prepack builds it), lints the tarball with publint and
// @arethetypeswrong/cli, then type-checks every TypeScript example of the
// README and docs/ in a consumer project (strict, module NodeNext,
// skipLibCheck false) that installs the tarball without the database drivers
// or their @types, and a consumer of store-app-kit/platform alone. Examples
// marked <!-- check-in: bun --> (deno, next) compile in programs of their own
// (test/consumer/<program>/tsconfig.json; see scripts/doc-examples.js).
// Both tarballs' file lists are checked first (scripts/package-files.js): no
// local state, nothing but what the packages are meant to ship.
// The browser module (store-app-kit/browser) as shipped must stay within
// BROWSER_MODULE_BUDGET bytes minified (esbuild) and gzipped.
// Flags: --tarball <file> reuses a packed kit.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';
import { extractExamples } from './doc-examples.js';
import { committedFiles, packProblems, tarballFiles } from './package-files.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Types of the runtimes docs/runtimes.md's Bun and Deno examples run on, from the
// npm registry, exact: @types/bun of the Bun test/runtimes installs (1.4.4);
// @types/deno (Deno's own declarations of the Deno namespace, published by its
// authors on DefinitelyTyped) of 2.7, the newest there, for the Deno 2.9 tested.
const RUNTIME_TYPES = { '@types/bun': '1.4.4', '@types/deno': '2.7.0' };
const bin = (name) => join(root, 'node_modules', '.bin', name);
/** issue 34: the page's one dependency stays small (min+gzip, bytes). */
const BROWSER_MODULE_BUDGET = 3 * 1024;

function run(cmd, args, cwd, what) {
  console.log(`check:package: ${what}`);
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`check:package: ${what} failed`);
    process.exit(1);
  }
}

const work = mkdtempSync(join(tmpdir(), 'store-app-kit-package-'));
try {
  let tarball;
  const given = process.argv.indexOf('--tarball');
  if (given > 0) tarball = resolve(process.argv[given + 1]);
  else {
    run('npm', ['pack', '--silent', '--pack-destination', work], root, 'npm pack');
    tarball = join(
      work,
      readdirSync(work).find((f) => f.endsWith('.tgz')),
    );
  }
  run(bin('publint'), ['--strict', tarball], root, 'publint');
  const creatorDir = join(work, 'create-app');
  mkdirSync(creatorDir);
  run(
    'npm',
    ['pack', '--silent', '--pack-destination', creatorDir],
    join(root, 'create-app'),
    'npm pack (create-store-app)',
  );
  const creator = join(
    creatorDir,
    readdirSync(creatorDir).find((f) => f.endsWith('.tgz')),
  );
  run(bin('publint'), ['--strict', creator], root, 'publint (create-store-app)');
  checkFiles('kit', tarball, ['docs', 'migrations'], root);
  checkFiles('create-store-app', creator, ['templates'], join(root, 'create-app'));
  // ESM only: Node >= 20.19 can require() it, which attw's node16-from-CJS row does not model.
  run(bin('attw'), [tarball, '--profile', 'esm-only'], root, 'attw');

  const consumer = join(work, 'consumer');
  mkdirSync(join(consumer, 'src'), { recursive: true });
  const kitPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  writeFileSync(
    join(consumer, 'package.json'),
    `${JSON.stringify(
      {
        name: 'consumer',
        private: true,
        type: 'module',
        dependencies: {
          'store-app-kit': `file:${tarball}`,
          express: kitPkg.devDependencies.express,
          'drizzle-orm': kitPkg.peerDependencies['drizzle-orm'],
          // docs/runtimes.md's Hono on Node.
          hono: kitPkg.devDependencies.hono,
          '@hono/node-server': kitPkg.devDependencies['@hono/node-server'],
        },
        devDependencies: {
          '@types/express': kitPkg.devDependencies['@types/express'],
          '@types/node': kitPkg.devDependencies['@types/node'],
          ...RUNTIME_TYPES,
        },
      },
      null,
      2,
    )}\n`,
  );
  copyFileSync(join(root, 'test', 'consumer', 'tsconfig.json'), join(consumer, 'tsconfig.json'));
  copyFileSync(join(root, 'test', 'consumer', 'typed.ts'), join(consumer, 'src', 'typed.ts'));
  mkdirSync(join(consumer, 'src', 'db'));
  copyFileSync(
    join(root, 'test', 'consumer', 'db', 'schema.ts'),
    join(consumer, 'src', 'db', 'schema.ts'),
  );
  const examples = extractExamples(root);
  const programs = new Set();
  for (const [i, ex] of examples.entries()) {
    if (ex.program === 'default') {
      const name = `example-${i}.ts`;
      writeFileSync(join(consumer, 'src', name), `// ${ex.from}\n${ex.code}\nexport {};\n`);
      continue;
    }
    const config = join(root, 'test', 'consumer', ex.program, 'tsconfig.json');
    if (!existsSync(config)) {
      console.error(`check:package: ${ex.from} names a program without ${config}`);
      process.exit(1);
    }
    const dir = join(consumer, ex.program);
    if (!programs.has(ex.program)) {
      mkdirSync(dir);
      copyFileSync(config, join(dir, 'tsconfig.json'));
      programs.add(ex.program);
    }
    const file = join(dir, ex.file ?? `example-${i}.ts`);
    if (existsSync(file)) {
      console.error(`check:package: ${ex.from}: a second block for ${ex.program}/${ex.file}`);
      process.exit(1);
    }
    mkdirSync(dirname(file), { recursive: true });
    // A named file is the reader's file as is: no prelude, no line before its name.
    writeFileSync(file, ex.file ? ex.code : `// ${ex.from}\n${ex.code}\nexport {};\n`);
  }
  console.log(
    `check:package: ${examples.length} examples from README.md and docs/ (programs: default, ${[...programs].join(', ')})`,
  );
  run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'],
    consumer,
    'consumer install (no database driver, no driver @types)',
  );
  browserModuleSize(join(consumer, 'node_modules', 'store-app-kit', 'dist', 'browser', 'index.js'));
  // Every example, the local platform's included, with neither driver's types installed.
  typeCheck(consumer, {}, 'every example, no driver types');
  // The runtime programs, each alone: Bun's globals and Deno's are not one program's, and a
  // Next.js app compiles with its own options. skipLibCheck there: the kit's declarations
  // were just checked, and bun-types (made for a newer @types/node than Node 20's) and
  // @types/deno (made for Deno's web globals, not Node's) do not compile cleanly beside
  // @types/node 20 themselves; the examples' code is checked all the same.
  for (const program of programs) {
    typeCheckProgram(
      consumer,
      program,
      examples.filter((ex) => ex.program === program && ex.file),
    );
  }
  // A consumer of store-app-kit/platform alone, without better-sqlite3 or its types: the
  // platform runs on better-sqlite3, but its declarations must not need it (nor anything
  // that is not one of our dependencies or peers) to compile.
  writeFileSync(
    join(consumer, 'platform-only.ts'),
    "import { type Platform, startPlatform } from 'store-app-kit/platform';\n" +
      'const platform: Platform = await startPlatform();\n' +
      'await platform.close();\nexport {};\n',
  );
  typeCheck(consumer, { include: ['platform-only.ts'] }, 'store-app-kit/platform alone');
  console.log('check:package: ok');
} finally {
  rmSync(work, { recursive: true, force: true });
}

/** The shipped browser module, minified and gzipped, against its budget. */
function browserModuleSize(file) {
  const min = buildSync({
    entryPoints: [file],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    write: false,
  }).outputFiles[0].contents;
  const gz = gzipSync(min, { level: 9 }).length;
  console.log(
    `check:package: store-app-kit/browser is ${min.length} B minified, ${gz} B gzipped (budget ${BROWSER_MODULE_BUDGET} B)`,
  );
  if (gz > BROWSER_MODULE_BUDGET) {
    console.error('check:package: store-app-kit/browser is over its size budget');
    process.exit(1);
  }
}

/** Fails when a tarball holds a file it must not, or lacks one it must have. */
function checkFiles(kind, tarball, shippedAsCommitted, pkgDir) {
  console.log(`check:package: file list (${kind})`);
  const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const files = tarballFiles(tarball);
  const problems = packProblems(kind === 'kit' ? 'kit' : 'creator', {
    files,
    committed: committedFiles(root, shippedAsCommitted),
    pkg,
  });
  if (problems.length > 0) {
    console.error(problems.map((p) => `  ${p}`).join('\n'));
    console.error(`check:package: the ${kind} tarball's file list is wrong`);
    process.exit(1);
  }
  console.log(`check:package: ${files.length} files, as expected`);
}

/**
 * tsc over the consumer with skipLibCheck false. Fails on any error in the
 * examples or in the kit's own .d.ts; errors inside other packages'
 * declarations (drizzle-orm's do not all compile under skipLibCheck false)
 * are counted, not fatal: they are not ours to fix.
 */
function typeCheck(consumer, extra, what) {
  const config = JSON.parse(readFileSync(join(consumer, 'tsconfig.json'), 'utf8'));
  writeFileSync(join(consumer, 'tsconfig.check.json'), JSON.stringify({ ...config, ...extra }));
  console.log(`check:package: type check, ${what} (strict, NodeNext, skipLibCheck false)`);
  const r = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.check.json'],
    { cwd: consumer, encoding: 'utf8' },
  );
  const errors = r.stdout.split('\n').filter((l) => /\(\d+,\d+\): error TS/.test(l));
  const ours = errors.filter(
    (l) => !l.startsWith('node_modules/') || l.startsWith('node_modules/store-app-kit/'),
  );
  const others = new Set(errors.filter((l) => !ours.includes(l)).map((l) => l.split('/')[1]));
  if (others.size > 0)
    console.log(
      `check:package: ignored ${errors.length - ours.length} errors inside ${[...others].join(', ')}`,
    );
  if (ours.length > 0 || (r.status !== 0 && errors.length === 0)) {
    console.error(ours.join('\n') || r.stdout || r.stderr);
    console.error(`check:package: type check (${what}) failed`);
    process.exit(1);
  }
}

/**
 * tsc over one runtime program (test/consumer/<program>/tsconfig.json): any
 * error fails. `named`: its blocks written under their own file names, which
 * carry no line naming their block, listed on failure.
 */
function typeCheckProgram(consumer, program, named) {
  console.log(`check:package: type check, the ${program} examples (test/consumer/${program})`);
  const r = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(program, 'tsconfig.json')],
    { cwd: consumer, encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.error(r.stdout || r.stderr);
    for (const ex of named) console.error(`  ${program}/${ex.file}: ${ex.from}`);
    console.error(`check:package: type check (${program} examples) failed`);
    process.exit(1);
  }
}
