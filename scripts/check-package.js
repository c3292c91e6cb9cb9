#!/usr/bin/env node
// `npm run check:package`: the kit as a user gets it from the registry.
// Packs the kit (prepack builds it), lints the tarball with publint and
// @arethetypeswrong/cli, then type-checks every TypeScript example of the
// README and docs/ in a consumer project (strict, module NodeNext,
// skipLibCheck false) that installs the tarball without the database drivers
// or their @types, and a consumer of store-app-kit/platform alone.
// Both tarballs' file lists are checked first (scripts/package-files.js): no
// local state, nothing but what the packages are meant to ship.
// Flags: --tarball <file> reuses a packed kit.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
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
import { committedFiles, packProblems, tarballFiles } from './package-files.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

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
        },
        devDependencies: {
          '@types/express': kitPkg.devDependencies['@types/express'],
          '@types/node': kitPkg.devDependencies['@types/node'],
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
  const examples = extractExamples();
  for (const [i, ex] of examples.entries()) {
    const name = `example-${i}.ts`;
    writeFileSync(join(consumer, 'src', name), `// ${ex.from}\n${ex.code}\nexport {};\n`);
  }
  console.log(`check:package: ${examples.length} examples from README.md and docs/`);
  run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'],
    consumer,
    'consumer install (no database driver, no driver @types)',
  );
  // Every example, the local platform's included, with neither driver's types installed.
  typeCheck(consumer, {}, 'every example, no driver types');
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
 * Every ```ts (or ```typescript) block in the README and docs/, indented ones
 * in lists included, is an example and must compile. Names an example leaves
 * to the reader come from a prelude of the usual ones (`express`, `app`,
 * `kit`, `storeApp`, `startPlatform`), each added only when the
 * block neither imports nor declares it, plus an HTML comment just before the
 * block: <!-- check: declare const storeId: string; -->. `…` stands for
 * elided code. Signatures that are not code are fenced as ```text.
 */
function extractExamples() {
  const files = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const out = [];
  for (const file of files) {
    const lines = readFileSync(join(root, file), 'utf8').split('\n');
    let block = null;
    let prelude = '';
    for (const [n, line] of lines.entries()) {
      const check = /^\s*<!-- check: (.*) -->$/.exec(line);
      const fence = /^(\s*)```(\S*)\s*$/.exec(line);
      if (check) prelude = check[1];
      else if (block === null && fence) {
        block = { start: n + 1, indent: fence[1].length, lang: fence[2], body: [] };
      } else if (block !== null && fence && fence[2] === '') {
        if (block.lang === 'ts' || block.lang === 'typescript') {
          const code = block.body.map((l) => l.slice(block.indent)).join('\n');
          const body = code.replace(/\{ … \}/g, '{}').replace(/\/\/ …/g, '');
          out.push({
            from: `${file}:${block.start}`,
            // The prelude's declarations count as bound: no second `kit`.
            code: `${defaults(`${prelude}\n${body}`)}${prelude}\n${body}`,
          });
        }
        block = null;
        prelude = '';
      } else if (block !== null) block.body.push(line);
    }
  }
  return out;
}

/** The usual free names of a docs example, each unless the example binds it itself. */
function defaults(code) {
  const binds = (name) =>
    new RegExp(
      `(import[^;]*\\b${name}\\b[^;]*from|(const|let|var|function|class)\\s+${name}\\b)`,
    ).test(code);
  const lines = [];
  if (!binds('express')) lines.push("import express from 'express';");
  const kitNames = ['storeApp'].filter((n) => !binds(n));
  if (!binds('StoreAppKit')) kitNames.push('type StoreAppKit');
  lines.push(`import { ${kitNames.join(', ')} } from 'store-app-kit';`);
  if (!binds('startPlatform'))
    lines.push("import { startPlatform } from 'store-app-kit/platform';");
  if (!binds('app')) lines.push('declare const app: express.Express;');
  if (!binds('kit')) lines.push('declare const kit: StoreAppKit;');
  return `${lines.join('\n')}\n`;
}
