// Runs every benchmark suite in bench/suites/ (plain ESM against the built
// dist/), one process each so one suite's heap cannot skew the next.
// `npm run bench` builds first. `npm run bench -- platform` runs suites whose
// file name contains "platform".
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'suites');
const filter = process.argv[2];
const suites = readdirSync(dir)
  .filter((f) => f.endsWith('.js') && (!filter || f.includes(filter)))
  .sort();
let failed = 0;
for (const file of suites) {
  console.log(`\n## ${file}`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(dir, file)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
if (failed) {
  console.error(`${failed} suite(s) failed`);
  process.exit(1);
}
