// Installs the peer bench's libraries into bench/peers/node_modules, on demand:
// `npm run bench:peers` runs this first. They are not in the repository's own
// dependencies because @shopify/shopify-api@15 wants Node >= 22 (an EBADENGINE
// warning on every root install) and its SQLite session storage compiles
// sqlite3 from source (minutes on a small machine), which nobody but this
// bench needs. `npm ci` from the committed bench/peers/package-lock.json, once
// per lockfile: a marker in node_modules records which lockfile it installed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const marker = join(here, 'node_modules', '.store-app-kit-installed');
const lock = createHash('sha256')
  .update(readFileSync(join(here, 'package-lock.json')))
  .digest('hex');

if (existsSync(marker) && readFileSync(marker, 'utf8') === lock) process.exit(0);

console.log('bench:peers: installing the peer libraries into bench/peers/node_modules (once)');
// Under `npm run`, npm_execpath is the npm that runs us; otherwise the one on PATH.
const npm = process.env.npm_execpath;
const args = ['ci', '--prefix', here, '--no-audit', '--no-fund'];
// Not the root's prefix, which `npm run` passes down in the environment.
const env = { ...process.env };
delete env.npm_config_local_prefix;
const options = { cwd: here, stdio: 'inherit', env };
const r = npm
  ? spawnSync(process.execPath, [npm, ...args], options)
  : spawnSync('npm', args, { ...options, shell: process.platform === 'win32' });
if (r.status !== 0) {
  console.error('bench:peers: `npm ci` in bench/peers failed; see the output above.');
  process.exit(1);
}
writeFileSync(marker, lock);
