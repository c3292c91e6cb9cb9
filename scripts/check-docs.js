#!/usr/bin/env node
// `npm run check:docs`: every relative link in the README, docs/ and the two
// package READMEs resolves: the file exists, and a `#fragment` names a heading
// of the target (GitHub's slugs). A document named in a code span by a
// relative path (`../x/y.md`) must resolve too. Anything outside the repository
// fails: neither users of the repository nor of the package have it.
// The TypeScript examples are type-checked by `npm run check:package`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const files = [
  'README.md',
  'CHANGELOG.md',
  'create-app/README.md',
  'templates/express/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks and code spans, where links are links. */
function prose(text) {
  return text.replace(/^\s*```[\s\S]*?^\s*```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  for (const line of prose(readFileSync(file, 'utf8')).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  // Inline <a id="…"> / <a name="…"> anchors.
  for (const m of readFileSync(file, 'utf8').matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]);
  return out;
}

const problems = [];
let checked = 0;
for (const file of files) {
  const path = join(root, file);
  if (!existsSync(path)) continue;
  const text = readFileSync(path, 'utf8');
  const lines = prose(text).split('\n');
  // Code spans that name a document by a relative path, outside fenced blocks.
  const spans = text
    .replace(/^\s*```[\s\S]*?^\s*```/gm, (block) => block.replace(/[^\n]/g, ''))
    .split('\n');
  for (const [n, line] of lines.entries()) {
    const links = [...line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
    const named = [...(spans[n] ?? '').matchAll(/`(\.\.?\/[^`\s]+\.md)`/g)];
    for (const m of [...links, ...named]) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked++;
      const [pathPart, fragment] = target.split('#');
      const to = pathPart ? resolve(dirname(path), decodeURIComponent(pathPart)) : path;
      const where = `${file} (line ${n + 1}): ${target}`;
      if (relative(root, to).startsWith('..')) {
        problems.push(`${where}: outside the repository`);
      } else if (!existsSync(to)) {
        problems.push(`${where}: no such file`);
      } else if (fragment && to.endsWith('.md') && statSync(to).isFile()) {
        if (!anchors(to).has(fragment)) problems.push(`${where}: no heading #${fragment}`);
      }
    }
  }
}
if (problems.length > 0) {
  console.error(problems.map((p) => `  ${p}`).join('\n'));
  console.error(`check:docs: ${problems.length} broken relative link(s)`);
  process.exit(1);
}
console.log(`check:docs: ${checked} relative links in ${files.length} files resolve`);
