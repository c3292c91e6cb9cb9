// Summarises a V8 .cpuprofile (node --cpu-prof): the top frames by self time,
// and by total time for frames whose url matches an optional filter.
//   node bench/tools/profile-summary.js <file.cpuprofile> [topN] [urlFilter]
import { readFileSync } from 'node:fs';

const [file, topArg = '25', filter] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/tools/profile-summary.js <file.cpuprofile> [topN] [urlFilter]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const self = new Map();
const dt = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const label = (n) => {
  const f = n.callFrame;
  const url = f.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist|bench)\//, '$1/');
  return `${f.functionName || '(anonymous)'} ${url}${url ? `:${f.lineNumber + 1}` : ''}`;
};
const selfBy = new Map();
const totalBy = new Map();
for (const [id, t] of self) {
  const key = label(byId.get(id));
  selfBy.set(key, (selfBy.get(key) ?? 0) + t);
  // Inclusive time: charge each distinct frame on the stack once.
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = label(byId.get(cur));
    if (seen.has(k)) continue;
    seen.add(k);
    totalBy.set(k, (totalBy.get(k) ?? 0) + t);
  }
}
const top = Number(topArg);
const pct = (t) => `${((100 * t) / total).toFixed(1)}%`.padStart(6);
console.log(`self time, top ${top} of ${(total / 1000).toFixed(0)} ms sampled`);
for (const [k, t] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(pct(t), k);
console.log(`\ntotal (inclusive) time${filter ? ` of frames matching ${filter}` : ''}`);
for (const [k, t] of [...totalBy]
  .filter(([k]) => !filter || k.includes(filter))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(pct(t), k);
