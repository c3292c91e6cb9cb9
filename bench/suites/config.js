// Cost of the options schema (valibot) at start: cold import of the library
// and of src/config in fresh processes, next to a baseline import of a
// built-in module and the kit's main entry measured in the same rounds;
// then resolveConfig() itself (first call builds the schemas).
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, report } from '../lib.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = (p) => pathToFileURL(join(root, 'dist', p)).href;
// The ESM entry, as the kit imports it (require.resolve would give the CJS build).
const valibot = import.meta.resolve('valibot');
const rounds = Number(process.env.CONFIG_BENCH_ROUNDS ?? 15);

function coldImport(specifier) {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: root }));
}

const targets = {
  baseline: 'node:path',
  valibot,
  config: dist('config/index.js'),
  main: dist('index.js'),
};
const samples = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
// Interleaved, so a burst of load on the shared machine hits every target alike.
for (let i = 0; i < rounds; i++) {
  for (const [name, spec] of Object.entries(targets)) samples[name].push(coldImport(spec));
}
const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
report(`cold import, median of ${rounds} fresh processes`, {
  'node:path (baseline) ms': m.baseline.toFixed(1),
  'valibot ms': m.valibot.toFixed(1),
  'dist/config/index.js ms': m.config.toFixed(1),
  'dist/index.js (main entry) ms': m.main.toFixed(1),
  'valibot minus baseline ms': (m.valibot - m.baseline).toFixed(1),
  'valibot / main entry': ((m.valibot - m.baseline) / m.main).toFixed(3),
});

const resolveCode = `
const { resolveConfig } = await import(${JSON.stringify(dist('config/index.js'))});
const { generateKey } = await import(${JSON.stringify(dist('crypto/index.js'))});
const env = { STORE_APP_CLIENT_ID: 'app_bench', STORE_APP_CLIENT_SECRET: 'bench-secret-0123456789',
  STORE_APP_SCOPES: 'read_products,read_orders', STORE_APP_URL: 'https://app.example.com',
  STORE_AUTH_URL: 'https://auth.example.com', STORE_APP_ENCRYPTION_KEYS: generateKey(),
  STORE_APP_SESSION_SECRET: 's'.repeat(32),
  STORE_APP_WEBHOOK_SECRET: 'whsec_' + Buffer.alloc(32, 1).toString('base64') };
let t = performance.now(); resolveConfig({}, env); const first = performance.now() - t;
t = performance.now(); for (let i = 0; i < 1000; i++) resolveConfig({}, env);
console.log(JSON.stringify({ first, each: (performance.now() - t) / 1000 }));`;
const runs = [];
for (let i = 0; i < Math.max(5, Math.floor(rounds / 2)); i++) {
  runs.push(
    JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', resolveCode], { cwd: root }),
    ),
  );
}
report('resolveConfig()', {
  'first call ms (builds the schemas)': median(runs.map((r) => r.first)).toFixed(2),
  'later calls µs': (median(runs.map((r) => r.each)) * 1000).toFixed(0),
});
