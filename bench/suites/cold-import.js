// Cold start of an app's first import: a fresh node process imports the main
// entry of store-app-kit, then what storeApp() imports before any I/O: the
// kit's HTTP and storage graph (dist/kit.js) and the driver modules of the
// configured dialect. Median of
// fresh processes, the cases interleaved round by round. Baselines in the same
// run: an empty node process, and the eager graph the kit had before drivers
// became optional peers (main entry + kit graph + both drivers).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const main = pathToFileURL(join(root, 'dist', 'index.js')).href;
const kit = `import('${pathToFileURL(join(root, 'dist', 'kit.js')).href}')`;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

const sqlite = [
  "import('better-sqlite3')",
  "import('drizzle-orm/better-sqlite3')",
  "import('drizzle-orm/better-sqlite3/migrator')",
];
const postgres = [
  "import('pg')",
  "import('drizzle-orm/node-postgres')",
  "import('drizzle-orm/node-postgres/migrator')",
];
const cases = {
  'empty node process': [],
  'main entry only': [`import('${main}')`],
  'SQLite app (main, then storeApp() imports: kit + better-sqlite3)': [
    `import('${main}')`,
    kit,
    ...sqlite,
  ],
  'Postgres app (main, then storeApp() imports: kit + pg)': [`import('${main}')`, kit, ...postgres],
  'before: main + kit + both drivers (eager)': [`import('${main}')`, kit, ...sqlite, ...postgres],
};

function once(imports) {
  // Times from the process's own start (performance.timeOrigin): after the first
  // import (the main entry) and after all of them (the drivers on top).
  const [first, ...rest] = imports;
  const script = first
    ? `await ${first}; const a = performance.now(); ${rest.map((i) => `await ${i};`).join(' ')} process.stdout.write(JSON.stringify([a, performance.now()]));`
    : 'process.stdout.write(JSON.stringify([performance.now(), performance.now()]));';
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const drivers = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, imports] of Object.entries(cases)) {
    const [afterMain, end] = once(imports);
    samples[name].push(end);
    drivers[name].push(end - afterMain);
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const empty = median(samples['empty node process']);
const eager = median(samples['before: main + kit + both drivers (eager)']);
console.log(`cold import, median of ${ROUNDS} fresh processes (ms from process start)`);
const eagerDrivers = median(drivers['before: main + kit + both drivers (eager)']);
console.log(
  '| Case | total | minus empty node | vs eager | storeApp() imports after main | vs eager |',
);
console.log('|---|---|---|---|---|---|');
for (const [name, xs] of Object.entries(samples)) {
  const m = median(xs);
  const d = median(drivers[name]);
  console.log(
    `| ${name} | ${m.toFixed(0)} ms | ${(m - empty).toFixed(0)} ms | ${(m / eager).toFixed(2)} | ${d.toFixed(0)} ms | ${(d / eagerDrivers).toFixed(2)} |`,
  );
}
