import { relative } from 'node:path';
import { parseArgs } from 'node:util';
import * as p from '@clack/prompts';
import { CANCELLED, CreateAppError, INVALID_ARGUMENT } from './errors.js';
import {
  detectPackageManager,
  installedPackageManagers,
  isInstalled,
  listTemplates,
  ownVersion,
  PACKAGE_MANAGERS,
  type PackageManager,
  runCommand,
  type ScaffoldResult,
  scaffold,
  validatePackageName,
} from './scaffold.js';

export const HELP = `Usage: create-store-app [directory] [options]

Creates an embedded Merchant Store Platform app built on store-app-kit.

Options:
  --template <name>     Project template: express (default), hono, react or workers
                        (Hono on Cloudflare Workers with D1)
  --pm <npm|pnpm|yarn|bun>
                        Package manager (default: the one running this command)
  --no-install          Do not install dependencies
  --no-git              Do not create a git repository
  --yes, -y             Accept the defaults; never prompt
  --force               Replace the directory if it is not empty
  --kit <spec|tgz>      store-app-kit version, or a packed tarball (copied into vendor/)
                        (env CREATE_STORE_APP_KIT_SPEC)
  --help, -h            Show this help
  --version, -v         Print the version of create-store-app

Prompts are skipped when stdin is not a terminal or with --yes.`;

/** What the template prompt says of each template. */
const TEMPLATE_HINTS: Record<string, string> = {
  express: 'Express on Node',
  hono: 'Hono on Node',
  react: 'React UI (Vite), Express on Node',
  workers: 'Hono on Cloudflare Workers with D1',
};

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  isTTY: boolean;
  /** The prompt library. @default @clack/prompts (tests pass scripted answers) */
  prompts?: Prompts;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The part of @clack/prompts the CLI uses. */
export type Prompts = Pick<
  typeof p,
  'intro' | 'outro' | 'text' | 'select' | 'confirm' | 'isCancel'
>;

interface Choices {
  dir: string | undefined;
  template: string | undefined;
  pm: PackageManager | undefined;
  install: boolean | undefined;
  git: boolean | undefined;
  yes: boolean;
  force: boolean;
  kit: string | undefined;
  help: boolean;
  version: boolean;
}

export function parseCliArgs(argv: readonly string[]): Choices {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: [...argv],
      allowPositionals: true,
      allowNegative: true,
      strict: true,
      options: {
        template: { type: 'string', short: 't' },
        pm: { type: 'string' },
        install: { type: 'boolean' },
        git: { type: 'boolean' },
        yes: { type: 'boolean', short: 'y' },
        force: { type: 'boolean' },
        kit: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  }
  try {
    parsed = parse();
  } catch (err) {
    throw new CreateAppError(INVALID_ARGUMENT, `${(err as Error).message}\n\n${HELP}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) {
    throw new CreateAppError(
      INVALID_ARGUMENT,
      `Expected one directory, got ${positionals.length}.`,
    );
  }
  const pm = values.pm;
  if (pm !== undefined && !PACKAGE_MANAGERS.includes(pm as PackageManager)) {
    throw new CreateAppError(
      INVALID_ARGUMENT,
      `--pm must be one of ${PACKAGE_MANAGERS.join(', ')} (got "${pm}").`,
    );
  }
  return {
    dir: positionals[0],
    template: values.template,
    pm: pm as PackageManager | undefined,
    install: values.install,
    git: values.git,
    yes: values.yes ?? false,
    force: values.force ?? false,
    kit: values.kit,
    help: values.help ?? false,
    version: values.version ?? false,
  };
}

/** Fills every choice the flags left open: by prompting, or with defaults when we may not ask. */
async function resolveChoices(c: Choices, io: CliIo) {
  const interactive = io.isTTY && !c.yes;
  const ask = io.prompts ?? p;
  const unwrap = <T>(value: T | symbol): Exclude<T, symbol> => {
    if (ask.isCancel(value)) throw new CreateAppError(CANCELLED, 'Cancelled; nothing was written.');
    return value as Exclude<T, symbol>;
  };
  const detected = detectPackageManager(io.env);
  const templates = await listTemplates();
  // A mistyped template is a usage error, found before any question is asked.
  if (c.template !== undefined && !templates.includes(c.template)) {
    throw new CreateAppError(
      INVALID_ARGUMENT,
      `--template must be one of ${templates.join(', ')} (got "${c.template}").`,
    );
  }
  if (!interactive) {
    if (!c.dir) {
      throw new CreateAppError(
        INVALID_ARGUMENT,
        'Name the project directory, e.g. `create-store-app my-app`, when not prompting.',
      );
    }
    return {
      dir: c.dir,
      template: c.template ?? 'express',
      pm: c.pm ?? detected,
      install: c.install ?? true,
      git: c.git ?? true,
      interactive: false,
    };
  }
  ask.intro('create-store-app');
  const dir =
    c.dir ??
    unwrap(
      await ask.text({
        message: 'Project name',
        placeholder: 'my-store-app',
        defaultValue: 'my-store-app',
        validate: (v) => {
          const name = (v ?? '').trim() || 'my-store-app';
          const problem = validatePackageName(name.split(/[\\/]/).pop() ?? name);
          return problem ? `Not a valid npm package name: ${problem}` : undefined;
        },
      }),
    );
  const template =
    c.template ??
    (templates.length === 1
      ? (templates[0] ?? 'express')
      : unwrap(
          await ask.select({
            message: 'Template',
            initialValue: 'express',
            options: templates.map((t) => ({
              value: t,
              label: t,
              ...(TEMPLATE_HINTS[t] ? { hint: TEMPLATE_HINTS[t] } : {}),
            })),
          }),
        ));
  // Only what is installed here: a missing one would fail at the install step.
  const available = installedPackageManagers(io.env);
  const pm =
    c.pm ??
    (available.length <= 1
      ? (available[0] ?? detected)
      : unwrap(
          await ask.select<PackageManager>({
            message: 'Package manager',
            initialValue: available.includes(detected) ? detected : available[0],
            options: available.map((m) => ({ value: m, label: m })),
          }),
        ));
  const install =
    c.install ??
    unwrap(await ask.confirm({ message: 'Install dependencies?', initialValue: true }));
  const git =
    c.git ??
    unwrap(await ask.confirm({ message: 'Initialise a git repository?', initialValue: true }));
  return { dir, template, pm, install, git, interactive: true };
}

export function nextSteps(result: ScaffoldResult, cwd: string): string {
  const rel = relative(cwd, result.dir) || '.';
  const pm = result.packageManager;
  const lines = ['Next steps:'];
  if (rel !== '.') lines.push(`  cd ${rel.includes(' ') ? `"${rel}"` : rel}`);
  if (result.installed !== true) lines.push(`  ${pm} install`);
  lines.push(
    `  ${runCommand(pm, 'dev')}     # local platform + app; open the admin URL it prints`,
    `  ${runCommand(pm, 'test')}    # vitest against the local platform`,
  );
  if (result.template === 'workers') {
    lines.push(
      `  ${runCommand(pm, 'deploy')}  # to Cloudflare, after README.md's "Deploying" steps`,
    );
  }
  return lines.join('\n');
}

/** Runs the CLI; returns the exit code (0 ok, 1 failure, 2 usage). Never throws. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const choices = parseCliArgs(argv);
    if (choices.help) {
      io.stdout(`${HELP}\n`);
      return 0;
    }
    if (choices.version) {
      io.stdout(`${ownVersion()}\n`);
      return 0;
    }
    const c = await resolveChoices(choices, io);
    if (c.install && !isInstalled(c.pm, io.env)) {
      throw new CreateAppError(
        INVALID_ARGUMENT,
        `${c.pm} is not installed here; install it, pick another with --pm, or pass --no-install.`,
      );
    }
    const result = await scaffold({
      targetDir: c.dir,
      template: c.template,
      packageManager: c.pm,
      install: c.install,
      git: c.git,
      force: choices.force,
      kit: choices.kit,
      cwd: io.cwd,
      env: io.env,
      log: (line) => io.stdout(`  ${line}\n`),
    });
    io.stdout(`\nCreated ${result.name} in ${result.dir}\n`);
    if (result.installed === false) {
      io.stderr(`Dependency install failed; run \`${c.pm} install\` in the project.\n`);
    }
    io.stdout(`\n${nextSteps(result, io.cwd)}\n`);
    if (c.interactive) (io.prompts ?? p).outro('Happy building!');
    return result.installed === false ? 1 : 0;
  } catch (err) {
    if (err instanceof CreateAppError) {
      io.stderr(`${err.message}\n`);
      return err.code === INVALID_ARGUMENT ? 2 : 1;
    }
    io.stderr(`Unexpected failure: ${(err as Error).message}\n`);
    return 1;
  }
}
