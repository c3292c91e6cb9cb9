// Installs Bun and Deno from the npm registry into test/runtimes/node_modules
// for the Fetch shell's journey test (test/shells/bun-deno-journey.test.ts).
// .ci/run calls it; the test calls it when a runtime is missing outside CI.
// Not in the repository's own dependencies: @oven/bun-linux-x64 and
// @deno/linux-x64-glibc are Linux x64 builds, and `npm ci` of the root would
// fail on macOS and Windows with them. `npm ci` from the committed
// test/runtimes/package-lock.json (exact versions), once per lockfile: a marker
// in node_modules records which lockfile it installed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Where each runtime's executable lands once installed. */
export const RUNTIMES = {
  bun: join(here, 'node_modules', '@oven', 'bun-linux-x64', 'bin', 'bun'),
  deno: join(here, 'node_modules', '@deno', 'linux-x64-glibc', 'deno'),
};

const marker = join(here, 'node_modules', '.store-app-kit-installed');

/** Installs the runtimes unless this lockfile's are there; throws with the fix when it cannot. */
export function installRuntimes() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `test/runtimes holds Linux x64 builds of Bun and Deno; this is ${process.platform}-${process.arch}. ` +
        'Run the Bun/Deno journey on Linux x64 (CI does).',
    );
  }
  const lock = createHash('sha256')
    .update(readFileSync(join(here, 'package-lock.json')))
    .digest('hex');
  const installed =
    existsSync(marker) &&
    readFileSync(marker, 'utf8') === lock &&
    Object.values(RUNTIMES).every((bin) => existsSync(bin));
  if (installed) return;
  console.log('test/runtimes: installing Bun and Deno from the npm registry (once)');
  const args = ['ci', '--prefix', here, '--no-audit', '--no-fund'];
  // Not the root's prefix, which `npm run` passes down in the environment.
  const env = { ...process.env };
  delete env.npm_config_local_prefix;
  const r = spawnSync('npm', args, { cwd: here, stdio: 'inherit', env });
  const missing = Object.entries(RUNTIMES).filter(([, bin]) => !existsSync(bin));
  if (r.status !== 0 || missing.length > 0) {
    throw new Error(
      `test/runtimes: \`npm ci\` did not install ${missing.map(([name]) => name).join(', ') || 'the runtimes'}; ` +
        'see the output above (the npm registry must be reachable).',
    );
  }
  writeFileSync(marker, lock);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    installRuntimes();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
