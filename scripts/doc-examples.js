// The TypeScript examples of the README and docs/, as `npm run check:package`
// type-checks them in its consumer project (scripts/check-package.js). Also
// read by test/shells/next-route.test.ts, which runs the Next.js route modules
// of docs/runtimes.md as written.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A block's first line naming its file in a runtime program: `// app/api/products/route.ts`. */
const FILE_COMMENT = /^\/\/ ([\w@.[\]/-]+\.ts)$/;

/**
 * Every ```ts (or ```typescript) block in the README and docs/, indented ones
 * in lists included, is an example and must compile. Names an example leaves
 * to the reader come from a prelude of the usual ones (`express`, `app`,
 * `kit`, `storeApp`, `startPlatform`), each added only when the
 * block neither imports nor declares it, plus an HTML comment just before the
 * block: <!-- check: declare const storeId: string; -->. `…` stands for
 * elided code. Signatures that are not code are fenced as ```text.
 *
 * <!-- check-in: bun --> before a block compiles it in another program of the
 * consumer, test/consumer/<program>/tsconfig.json (Bun's or Deno's globals,
 * Next.js's compiler options), not in the default one. There a block whose
 * first line is a file comment (`// lib/store-app.ts`) is that file, as is,
 * and the program's other blocks may import it; the others are
 * example-<n>.ts with the prelude.
 *
 * @returns {{ from: string, program: string, file: string | null, code: string }[]}
 */
export function extractExamples(root) {
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
    let program = 'default';
    for (const [n, line] of lines.entries()) {
      const check = /^\s*<!-- check: (.*) -->$/.exec(line);
      const checkIn = /^\s*<!-- check-in: ([\w-]+) -->$/.exec(line);
      const fence = /^(\s*)```(\S*)\s*$/.exec(line);
      if (check) prelude = check[1];
      else if (checkIn) program = checkIn[1];
      else if (block === null && fence) {
        block = { start: n + 1, indent: fence[1].length, lang: fence[2], body: [] };
      } else if (block !== null && fence && fence[2] === '') {
        if (block.lang === 'ts' || block.lang === 'typescript') {
          const code = block.body.map((l) => l.slice(block.indent)).join('\n');
          const named = program === 'default' ? null : FILE_COMMENT.exec(block.body[0] ?? '');
          const from = `${file}:${block.start}`;
          if (named) out.push({ from, program, file: named[1], code: `${code}\n` });
          else {
            const body = code.replace(/\{ … \}/g, '{}').replace(/\/\/ …/g, '');
            out.push({
              from,
              program,
              file: null,
              // The prelude's declarations count as bound: no second `kit`.
              code: `${defaults(`${prelude}\n${body}`)}${prelude}\n${body}`,
            });
          }
        }
        block = null;
        prelude = '';
        program = 'default';
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
