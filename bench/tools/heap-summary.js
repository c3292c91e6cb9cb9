// Summarises an allocation sampling profile (bench/tools/profile-http.js with
// BENCH_PROFILE=heap): bytes allocated per request, by allocating function.
//   node bench/tools/heap-summary.js <file.heapprofile> <requests> [topN]
import { readFileSync } from 'node:fs';

const [file, requestsArg, topArg = '25'] = process.argv.slice(2);
if (!file || !requestsArg) {
  console.error('usage: node bench/tools/heap-summary.js <file.heapprofile> <requests> [topN]');
  process.exit(2);
}
const { head } = JSON.parse(readFileSync(file, 'utf8'));
const requests = Number(requestsArg);
const bySite = new Map();
let total = 0;
const walk = (node) => {
  const f = node.callFrame;
  const url = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|bench)\//, '$1/');
  const key = `${f.functionName || '(anonymous)'} ${url}${url ? `:${f.lineNumber + 1}` : ''}`;
  const bytes = node.selfSize;
  total += bytes;
  bySite.set(key, (bySite.get(key) ?? 0) + bytes);
  for (const c of node.children) walk(c);
};
walk(head);
console.log(`${(total / requests).toFixed(0)} bytes allocated per request (sampled)`);
for (const [k, b] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg))) {
  console.log(`${(b / requests).toFixed(0).padStart(7)} B  ${k}`);
}
