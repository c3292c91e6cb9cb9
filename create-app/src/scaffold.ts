import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import validateName from 'validate-npm-package-name';
import {
  CreateAppError,
  INVALID_ARGUMENT,
  INVALID_NAME,
  SCAFFOLD_FAILED,
  TARGET_NOT_EMPTY,
  TEMPLATES_MISSING,
  UNKNOWN_TEMPLATE,
} from './errors.js';
import { generateSecrets, renderEnv, renderEnvExample, type SettingsFile } from './secrets.js';

export type PackageManager = 'npm' | 'pnpm' | 'yarn' | 'bun';
export const PACKAGE_MANAGERS: readonly PackageManager[] = ['npm', 'pnpm', 'yarn', 'bun'];

/**
 * A template's list of the layers it is laid on (one folder name a line, in order), when it
 * needs more than the shared layer. Read by the scaffolder, never copied.
 */
export const LAYERS_FILE = '_layers';

/** Top-level entries of a template folder never copied: build output and local state of the repo demo. */
const SKIPPED = new Set([
  'node_modules',
  'dist',
  'data',
  '.env',
  '.dev.vars',
  '.wrangler',
  'test-artifacts',
  LAYERS_FILE,
]);

/**
 * The folder of the templates directory holding the files every template shares (the notes
 * table, the settings loader, the compiler and test settings). It is laid down first; a
 * template's own file at the same path replaces it. Folders starting with `_` are layers,
 * not templates.
 */
export const SHARED_LAYER = '_shared';

export interface ScaffoldOptions {
  /** Where the project goes; relative paths resolve against `cwd`. */
  targetDir: string;
  /** npm package name. @default basename of targetDir */
  name?: string;
  /** Template folder name under the templates directory. @default 'express' */
  template?: string;
  /** Package manager for the install and the printed commands. @default 'npm' */
  packageManager?: PackageManager;
  /** Install dependencies after writing. @default false */
  install?: boolean;
  /** `git init` and a first commit when git is available. @default true */
  git?: boolean;
  /** Replace a non-empty target directory. @default false */
  force?: boolean;
  /**
   * Version spec of `store-app-kit` written into package.json: a semver range, or a path to a
   * packed tarball, which is copied into the project's `vendor/` and referenced as
   * `file:vendor/<name>.tgz` (so the project installs on another host too).
   * @default env CREATE_STORE_APP_KIT_SPEC, else `^<this package's version>`
   */
  kit?: string;
  /** @default process.cwd() */
  cwd?: string;
  /** @default the templates shipped with this package (or ../templates in the repository) */
  templatesDir?: string;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /**
   * Called after the files are written into the temporary directory, before it is moved into
   * place; tests use it to inject a failure part-way.
   * @default none
   */
  beforeCommit?: (tempDir: string) => void | Promise<void>;
  /** Progress lines. @default silent */
  log?: (line: string) => void;
}

export interface ScaffoldResult {
  dir: string;
  name: string;
  template: string;
  packageManager: PackageManager;
  gitCommitted: boolean;
  /** null when install was not requested. */
  installed: boolean | null;
}

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * In the repository, `create-app/../templates` (the one source, so nothing can drift); in the
 * published package, `<pkg>/templates` (copied in by `prepack`).
 */
export function defaultTemplatesDir(): string {
  const repoTemplates = join(packageRoot, '..', 'templates');
  if (isKitRepository(join(packageRoot, '..')) && hasTemplate(repoTemplates)) return repoTemplates;
  const shipped = join(packageRoot, 'templates');
  if (hasTemplate(shipped)) return shipped;
  throw new CreateAppError(
    TEMPLATES_MISSING,
    `No templates found in ${shipped}; reinstall create-store-app.`,
  );
}

function hasTemplate(dir: string): boolean {
  return existsSync(join(dir, 'express', 'package.json'));
}

function isKitRepository(dir: string): boolean {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
    return pkg.name === 'store-app-kit';
  } catch {
    return false;
  }
}

export async function listTemplates(templatesDir = defaultTemplatesDir()): Promise<string[]> {
  const entries = await readdir(templatesDir, { withFileTypes: true });
  return entries
    .filter(
      (e) =>
        e.isDirectory() &&
        !e.name.startsWith('_') &&
        existsSync(join(templatesDir, e.name, 'package.json')),
    )
    .map((e) => e.name)
    .sort();
}

/** This package's version (`--version`, and the default kit range). */
export function ownVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Returns the reason a name is unusable as a new npm package, or null when it is fine. */
export function validatePackageName(name: string): string | null {
  const r = validateName(name);
  if (r.validForNewPackages) return null;
  return [...(r.errors ?? []), ...(r.warnings ?? [])].join('; ') || 'invalid package name';
}

/** Reads `npm_config_user_agent` (e.g. `pnpm/9.1.0 npm/? node/v20…`) to find who ran us. */
export function detectPackageManager(env: NodeJS.ProcessEnv = process.env): PackageManager {
  const agent = env['npm_config_user_agent'] ?? '';
  const name = agent.split(' ')[0]?.split('/')[0];
  return PACKAGE_MANAGERS.find((pm) => pm === name) ?? 'npm';
}

/** Where a packed kit given by `--kit` is copied inside the new project. */
export const VENDOR_DIR = 'vendor';

/** The tarball a `file:…tgz` kit spec names (absolute), or undefined for a registry range. */
function tarballPath(spec: string): string | undefined {
  if (!spec.startsWith('file:') || !spec.endsWith('.tgz')) return undefined;
  return resolve(spec.slice('file:'.length));
}

export function kitSpecFrom(kit: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  const spec = kit ?? env['CREATE_STORE_APP_KIT_SPEC'] ?? `^${ownVersion()}`;
  if (spec.endsWith('.tgz') && !spec.startsWith('file:')) return `file:${resolve(cwd, spec)}`;
  return spec;
}

async function isEmptyDir(dir: string): Promise<boolean | null> {
  try {
    const s = await stat(dir);
    if (!s.isDirectory()) return false;
  } catch {
    return null;
  }
  // A fresh `git init` or an editor's folder is not a project; anything else is.
  const entries = (await readdir(dir)).filter((e) => e !== '.git' && e !== '.DS_Store');
  return entries.length === 0;
}

/** True when `pm` answers `--version` on this machine (what the prompt may offer). */
export function isInstalled(pm: PackageManager, env: NodeJS.ProcessEnv = process.env): boolean {
  const r = spawnSync(pm, ['--version'], {
    stdio: 'ignore',
    env,
    timeout: 10_000,
    shell: process.platform === 'win32',
  });
  return r.status === 0;
}

/** The package managers installed here, in PACKAGE_MANAGERS order. */
export function installedPackageManagers(env: NodeJS.ProcessEnv = process.env): PackageManager[] {
  return PACKAGE_MANAGERS.filter((pm) => isInstalled(pm, env));
}

/** Packages of the template whose install scripts must run (better-sqlite3 builds its native module). */
export const BUILT_DEPENDENCIES = ['better-sqlite3', 'esbuild'] as const;

export function runCommand(pm: PackageManager, script: string): string {
  return pm === 'npm' ? `npm run ${script}` : `${pm} ${script}`;
}

function gitAvailable(): boolean {
  return spawnSync('git', ['--version'], { stdio: 'ignore' }).status === 0;
}

function gitCommit(dir: string): boolean {
  // Machines without a configured identity still get a commit, attributed to the tool.
  const identity = {
    GIT_AUTHOR_NAME: process.env['GIT_AUTHOR_NAME'] ?? 'create-store-app',
    GIT_AUTHOR_EMAIL: process.env['GIT_AUTHOR_EMAIL'] ?? 'create-store-app@localhost',
    GIT_COMMITTER_NAME: process.env['GIT_COMMITTER_NAME'] ?? 'create-store-app',
    GIT_COMMITTER_EMAIL: process.env['GIT_COMMITTER_EMAIL'] ?? 'create-store-app@localhost',
  };
  const hasIdentity =
    spawnSync('git', ['config', 'user.email'], { cwd: dir, encoding: 'utf8' }).stdout.trim() !== '';
  const env = hasIdentity ? process.env : { ...process.env, ...identity };
  const steps = [
    ['init', '-q'],
    ['add', '-A'],
    ['commit', '-q', '--no-verify', '-m', 'Initial commit from create-store-app'],
  ];
  for (const args of steps) {
    const r = spawnSync('git', args, { cwd: dir, env, stdio: 'ignore' });
    if (r.status !== 0) return false;
  }
  return true;
}

/**
 * The layers under `template`, in order: its `_layers` file (e.g. the shared layer, then
 * `_page`, the server-rendered page the Express and Hono templates share and the React
 * template does not), else the shared layer alone.
 */
export function layersOf(templatesDir: string, template: string): string[] {
  const file = join(templatesDir, template, LAYERS_FILE);
  if (!existsSync(file)) return [SHARED_LAYER];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/**
 * Lays a template's files into `dest`: its layers (the shared layer first), then the
 * template's own files over them (build output and local state left out). The scaffolder,
 * `npm run demo` and the tests all lay a template through this one function, so what they
 * run is what users get.
 */
export async function layTemplate(
  templatesDir: string,
  template: string,
  dest: string,
): Promise<void> {
  const layers = layersOf(templatesDir, template).map((l) => join(templatesDir, l));
  const missing = layers.find((l) => !existsSync(l));
  if (missing) {
    throw new CreateAppError(
      TEMPLATES_MISSING,
      `The templates' shared files (${missing}) are missing; reinstall create-store-app.`,
    );
  }
  for (const layer of [...layers, join(templatesDir, template)]) {
    await cp(layer, dest, {
      recursive: true,
      filter: (src) => dirname(src) !== layer || !SKIPPED.has(basename(src)),
    });
  }
}

/** The file of a project's local settings: wrangler's `.dev.vars` for a Worker, else `.env`. */
export function settingsFileOf(projectDir: string): SettingsFile {
  return existsSync(join(projectDir, 'wrangler.toml')) ? '.dev.vars' : '.env';
}

async function writeProject(
  tempDir: string,
  templatesDir: string,
  template: string,
  name: string,
  kitSpec: string,
  pm: PackageManager,
): Promise<void> {
  await layTemplate(templatesDir, template, tempDir);
  // npm drops .gitignore from published packages, so templates keep it as _gitignore.
  const gi = join(tempDir, '_gitignore');
  if (existsSync(gi)) await rename(gi, join(tempDir, '.gitignore'));

  // A packed kit (`--kit store-app-kit-x.tgz`, before the kit is on the registry) goes inside
  // the project: `file:vendor/…` resolves on any host that has the project, so `npm ci` works
  // there too (an absolute `file:/…` path works only on this machine).
  let spec = kitSpec;
  const kitTarball = tarballPath(kitSpec);
  if (kitTarball !== undefined) {
    if (!existsSync(kitTarball)) {
      throw new CreateAppError(
        INVALID_ARGUMENT,
        `--kit ${kitTarball}: no such file; pack the kit first (\`npm pack\` in store-app-kit).`,
      );
    }
    await mkdir(join(tempDir, VENDOR_DIR), { recursive: true });
    await cp(kitTarball, join(tempDir, VENDOR_DIR, basename(kitTarball)));
    spec = `file:${VENDOR_DIR}/${basename(kitTarball)}`;
  }

  const pkgPath = join(tempDir, 'package.json');
  const pkg = JSON.parse(await readFile(pkgPath, 'utf8')) as Record<string, unknown> & {
    dependencies?: Record<string, string>;
  };
  pkg['name'] = name;
  pkg['version'] = '0.1.0';
  pkg['private'] = true;
  pkg.dependencies = { ...pkg.dependencies, 'store-app-kit': spec };
  // Each package manager's own allowlist for install scripts, so better-sqlite3
  // gets its native build (npm's `allowScripts` is in the template already).
  if (pm === 'yarn') {
    pkg['dependenciesMeta'] = Object.fromEntries(
      BUILT_DEPENDENCIES.map((d) => [d, { built: true }]),
    );
  }
  if (pm === 'bun') pkg['trustedDependencies'] = [...BUILT_DEPENDENCIES];
  await writeFile(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`);
  if (pm === 'pnpm') {
    // pnpm 10+ skips dependencies' build scripts unless allowed; since pnpm 11
    // the setting is `allowBuilds` in pnpm-workspace.yaml (the older
    // `onlyBuiltDependencies` list is no longer read).
    await writeFile(
      join(tempDir, 'pnpm-workspace.yaml'),
      `allowBuilds:\n${BUILT_DEPENDENCIES.map((d) => `  ${d}: true`).join('\n')}\n`,
    );
  }

  // A Worker (wrangler.toml) reads its local settings from wrangler's `.dev.vars`, not `.env`.
  const settings = settingsFileOf(tempDir);
  await writeFile(join(tempDir, settings), renderEnv(generateSecrets(), settings), { mode: 0o600 });
  await writeFile(join(tempDir, `${settings}.example`), renderEnvExample(settings));
}

/**
 * Writes a new project. Files go into a hidden sibling directory first and are moved into place
 * with one rename, so an error part-way leaves nothing behind (and with `force`, the old
 * directory stays until the new one is complete).
 */
export async function scaffold(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const log = options.log ?? (() => {});
  const dir = resolve(cwd, options.targetDir);
  const name = options.name ?? basename(dir);
  const template = options.template ?? 'express';
  const packageManager = options.packageManager ?? 'npm';
  const templatesDir = options.templatesDir ?? defaultTemplatesDir();

  const nameProblem = validatePackageName(name);
  if (nameProblem) {
    throw new CreateAppError(
      INVALID_NAME,
      `"${name}" is not a valid npm package name: ${nameProblem}.`,
    );
  }
  const templates = await listTemplates(templatesDir);
  if (!templates.includes(template)) {
    throw new CreateAppError(
      UNKNOWN_TEMPLATE,
      `Unknown template "${template}". Available: ${templates.join(', ')}.`,
    );
  }
  const empty = await isEmptyDir(dir);
  if (empty === false && !options.force) {
    throw new CreateAppError(
      TARGET_NOT_EMPTY,
      `${dir} exists and is not empty. Choose another name, or pass --force to replace it.`,
    );
  }
  const kitSpec = kitSpecFrom(options.kit, env, cwd);

  const parent = dirname(dir);
  await mkdir(parent, { recursive: true });
  const suffix = randomBytes(4).toString('hex');
  const tempDir = join(parent, `.${basename(dir)}.create-store-app-${suffix}`);
  const backupDir = join(parent, `.${basename(dir)}.replaced-${suffix}`);
  let gitCommitted = false;
  try {
    await writeProject(tempDir, templatesDir, template, name, kitSpec, packageManager);
    log(`Wrote the ${template} template`);
    await options.beforeCommit?.(tempDir);
    if (empty !== null) await rename(dir, backupDir);
    try {
      await rename(tempDir, dir);
    } catch (err) {
      if (empty !== null) await rename(backupDir, dir);
      throw err;
    }
    if (empty !== null) await rm(backupDir, { recursive: true, force: true });
  } catch (err) {
    await rm(tempDir, { recursive: true, force: true });
    if (err instanceof CreateAppError) throw err;
    throw new CreateAppError(
      SCAFFOLD_FAILED,
      `Could not create ${dir}: ${(err as Error).message}. Nothing was written.`,
      { cause: err },
    );
  }

  let installed: boolean | null = null;
  if (options.install) {
    log(`Installing dependencies with ${packageManager}`);
    // Package managers are .cmd shims on Windows, which only a shell can start.
    const r = spawnSync(packageManager, ['install'], {
      cwd: dir,
      stdio: 'inherit',
      env,
      shell: process.platform === 'win32',
    });
    installed = r.status === 0;
  }
  // After the install, so the first commit holds the lockfile it wrote.
  if (options.git ?? true) {
    if (gitAvailable()) {
      gitCommitted = gitCommit(dir);
      if (!gitCommitted) {
        await rm(join(dir, '.git'), { recursive: true, force: true });
        log('git commit failed; skipped git (run git init yourself)');
      } else log('Created a git repository with a first commit');
    } else log('git not found; skipped git init');
  }
  return { dir, name, template, packageManager, gitCommitted, installed };
}
