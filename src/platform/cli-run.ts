/**
 * The `store-platform` command: runs the local Merchant Store Platform until Ctrl-C.
 * Prints its URLs and the credentials of any app registered with --app.
 */
import { readFileSync } from 'node:fs';
import { kitVersion } from '../cli/version.js';
import { closest } from '../options/index.js';
import { PlatformError } from './errors.js';
import { type FaultOptions, faultOptionsSchema } from './faults/index.js';
import {
  type AppCredentials,
  type Platform,
  type RegisterAppInput,
  startPlatform,
  type Tier,
} from './index.js';
import { type PlatformOptions, resolvePlatformOptions } from './options.js';
import { parsePlatformOptions } from './schema.js';

const HELP = `Usage: store-platform [options]

Runs a local Merchant Store Platform (OAuth server, REST API, admin, dashboard).

Options (flags win over the environment variables in brackets):
  --port <n>         Port to listen on (default 4400; 0 = any free port)
                     [STORE_PLATFORM_PORT]
  --host <host>      Interface to listen on (default 127.0.0.1; anything else
                     exposes client secrets to the network: a warning is printed)
                     [STORE_PLATFORM_HOST]
  --allowed-host <name>
                     Another Host name to answer to (repeatable); requests with
                     any other Host get 421 (DNS-rebinding defence)
                     [STORE_PLATFORM_ALLOWED_HOSTS, comma-separated]
  --db <file>        SQLite file to keep data across restarts (default: in memory)
                     [STORE_PLATFORM_DB]
  --revoke-on-code-replay
                     A second exchange of a used authorization code also revokes
                     every token issued from it (RFC 6749 4.1.2); default: tokens
                     stay valid, as the platform document says
                     [STORE_PLATFORM_REVOKE_ON_CODE_REPLAY=true|false]
  --seed [n]         Create a store filled with sample data (n products, default 60)
  --tier <tier>      Tier of apps registered with --app: community, partner, elite
  --app <file.json>  Register an app from {name, redirectUri, webhookUrl, scopes,
                     clientId?, clientSecret?, webhookSecret?, appUrl?, tier?}
                     (repeatable; fixed credentials let an app's .env match)
  --faults <file>    Inject faults from a JSON file of startPlatform's \`faults\`
                     option, e.g. {"api": {"errorRate": 0.1, "latencyMs": 200}}
  -h, --help         Show this help
  -v, --version      Print the version of store-app-kit
`;

/** Default port of the command (startPlatform's own default is 0, any free port). */
const DEFAULT_PORT = 4400;

/**
 * The flags and variables that set a `startPlatform` option, so a bad value is
 * reported under the name the operator typed. `kind` says how the text becomes
 * the option's type; the schema in options.ts judges the result.
 */
const OPTION_SETTINGS = {
  port: { flag: '--port', env: 'STORE_PLATFORM_PORT', kind: 'integer' },
  host: { flag: '--host', env: 'STORE_PLATFORM_HOST', kind: 'string' },
  allowedHosts: { flag: '--allowed-host', env: 'STORE_PLATFORM_ALLOWED_HOSTS', kind: 'list' },
  db: { flag: '--db', env: 'STORE_PLATFORM_DB', kind: 'string' },
  revokeOnCodeReplay: {
    flag: '--revoke-on-code-replay',
    env: 'STORE_PLATFORM_REVOKE_ON_CODE_REPLAY',
    kind: 'boolean',
  },
} as const;

type OptionKey = keyof typeof OPTION_SETTINGS;

/** Every flag the command knows (for "did you mean"). */
const FLAGS = [
  ...Object.values(OPTION_SETTINGS).map((s) => s.flag),
  '--seed',
  '--tier',
  '--app',
  '--faults',
  '--help',
  '--version',
];
const ENV_PREFIX = 'STORE_PLATFORM_';
const ENV_NAMES = Object.values(OPTION_SETTINGS).map((s) => s.env);

interface CliArgs {
  /** Raw option values (validated by the platform's schema), and where each came from. */
  options: Partial<Record<OptionKey, unknown>>;
  from: Map<string, string>;
  seed: number | boolean;
  tier: Tier | undefined;
  apps: string[];
  faults: string | undefined;
}

class UsageError extends Error {}

/** Text → the option's type where it is unambiguous; anything else goes to the schema as is. */
function convert(kind: 'integer' | 'string' | 'list' | 'boolean', text: string): unknown {
  switch (kind) {
    case 'integer':
      return /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
    case 'boolean': {
      const t = text.trim().toLowerCase();
      return t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : text;
    }
    case 'list':
      return text
        .split(',')
        .map((h) => h.trim())
        .filter((h) => h !== '');
    default:
      return text;
  }
}

/** Settings from STORE_PLATFORM_* variables; an unknown one is a mistake, not ignored. */
function fromEnv(env: NodeJS.ProcessEnv, args: CliArgs): void {
  for (const name of Object.keys(env)) {
    if (!name.startsWith(ENV_PREFIX) || ENV_NAMES.includes(name as never)) continue;
    const near = closest(name, ENV_NAMES);
    throw new UsageError(
      `${name}: is not a setting of store-platform; ${
        near ? `did you mean ${near}?` : `remove it. Settings: ${ENV_NAMES.join(', ')}.`
      }`,
    );
  }
  for (const [key, s] of Object.entries(OPTION_SETTINGS) as Array<
    [OptionKey, (typeof OPTION_SETTINGS)[OptionKey]]
  >) {
    const text = env[s.env];
    if (text === undefined || text === '') continue;
    args.options[key] = convert(s.kind, text);
    args.from.set(key, s.env);
  }
}

function parse(argv: string[], env: NodeJS.ProcessEnv): CliArgs | 'help' | 'version' {
  const out: CliArgs = {
    options: {},
    from: new Map(),
    seed: false,
    tier: undefined,
    apps: [],
    faults: undefined,
  };
  fromEnv(env, out);
  const flagged = new Set<OptionKey>();
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] as string;
    const eq = raw.indexOf('=');
    const flag = raw.startsWith('--') && eq > 0 ? raw.slice(0, eq) : raw;
    const inline = raw.startsWith('--') && eq > 0 ? raw.slice(eq + 1) : undefined;
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--'))
        throw new UsageError(`${flag} needs a value`);
      i++;
      return next;
    };
    const option = (Object.keys(OPTION_SETTINGS) as OptionKey[]).find(
      (k) => OPTION_SETTINGS[k].flag === flag,
    );
    if (option !== undefined) {
      const s = OPTION_SETTINGS[option];
      // A flag replaces the variable's value; a repeated --allowed-host adds to the flags' list.
      const text = s.kind === 'boolean' ? (inline ?? 'true') : value();
      const converted = convert(s.kind, text);
      if (s.kind === 'list') {
        const before = flagged.has(option) ? (out.options[option] as unknown[]) : [];
        out.options[option] = [...before, ...(converted as unknown[])];
      } else {
        out.options[option] = converted;
      }
      flagged.add(option);
      out.from.set(option, s.flag);
      continue;
    }
    switch (flag) {
      case '-h':
      case '--help':
        return 'help';
      case '-v':
      case '--version':
        return 'version';
      case '--seed': {
        const next = inline ?? argv[i + 1];
        if (next !== undefined && /^\d+$/.test(next)) {
          out.seed = Number(next);
          if (inline === undefined) i++;
        } else if (inline !== undefined) {
          throw new UsageError('--seed takes a number of products');
        } else out.seed = true;
        break;
      }
      case '--tier': {
        const t = value();
        if (t !== 'community' && t !== 'partner' && t !== 'elite') {
          throw new UsageError('--tier must be community, partner or elite');
        }
        out.tier = t;
        break;
      }
      case '--app':
        out.apps.push(value());
        break;
      case '--faults':
        out.faults = value();
        break;
      default: {
        const near = flag.startsWith('-') ? closest(flag, FLAGS) : undefined;
        throw new UsageError(
          `unknown option ${flag}${near ? `; did you mean ${near}?` : '; see the options below'}`,
        );
      }
    }
  }
  if (out.options.port === undefined) out.options.port = DEFAULT_PORT;
  return out;
}

function readJsonObject(flag: string, file: string): object {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`${flag} ${file}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${flag} ${file}: expected a JSON object`);
  }
  return parsed;
}

function readAppConfig(file: string, tier: Tier | undefined): RegisterAppInput {
  const config = readJsonObject('--app', file) as RegisterAppInput;
  return tier !== undefined && config.tier === undefined ? { ...config, tier } : config;
}

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Resolves when the platform should stop. @default SIGINT or SIGTERM */
  stopped?: Promise<void>;
  /** Called once the platform listens (tests read its URL). */
  onStarted?: (platform: Platform) => void;
  /** Where STORE_PLATFORM_* settings are read. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** The CLI without process globals, so tests run it in-process. Resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let args: CliArgs | 'help' | 'version';
  try {
    args = parse(argv, io.env ?? process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`store-platform: ${err.message}\n\n${HELP}`);
      return 2;
    }
    throw err;
  }
  if (args === 'help') {
    io.stdout(HELP);
    return 0;
  }
  if (args === 'version') {
    io.stdout(`${kitVersion()}\n`);
    return 0;
  }
  let platform: Platform;
  let configs: RegisterAppInput[];
  const options = args.options as PlatformOptions;
  try {
    configs = args.apps.map((f) => readAppConfig(f, args.tier));
    const faults = args.faults
      ? (parsePlatformOptions(
          faultOptionsSchema,
          readJsonObject('--faults', args.faults),
          `store-platform: --faults ${args.faults}`,
          { prefix: 'faults' },
        ) as FaultOptions)
      : undefined;
    // Checked here so a bad value is named by the flag or variable it came from.
    resolvePlatformOptions(options, { where: 'store-platform', settings: args.from });
    platform = await startPlatform({ ...options, ...(faults ? { faults } : {}) });
  } catch (err) {
    if (err instanceof UsageError || err instanceof PlatformError) {
      io.stderr(`${err instanceof UsageError ? 'store-platform: ' : ''}${err.message}\n`);
      return 2;
    }
    const code = (err as { code?: unknown }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      // One line an operator can act on, not Node's raw listen error.
      const why = code === 'EADDRINUSE' ? 'is already in use' : 'needs privileges this user lacks';
      const from = args.from.get('port');
      const via = from?.startsWith('STORE_PLATFORM_') ? ` (from ${from})` : '';
      io.stderr(
        `store-platform: port ${String(options.port)}${via} on ${options.host ?? '127.0.0.1'} ${why}; pick another with --port <n> (--port 0 for any free port)\n`,
      );
      return 1;
    }
    throw err;
  }
  const registered: Array<AppCredentials & { name: string }> = [];
  try {
    for (const config of configs)
      registered.push({ ...platform.registerApp(config), name: config.name });
  } catch (err) {
    await platform.close();
    // Code and message, one line (PLATFORM_APP_EXISTS, PLATFORM_INVALID_APP: a --app file).
    const code = (err as { code?: unknown }).code;
    io.stderr(
      `store-platform: ${typeof code === 'string' ? `${code}: ` : ''}${(err as Error).message}\n`,
    );
    return 1;
  }
  const lines = [
    `Merchant Store Platform running at ${platform.url}`,
    `  Admin:      ${platform.adminUrl}`,
    `  Dashboard:  ${platform.dashboardUrl}`,
    `  Authorize:  ${platform.authUrl}/oauth/authorize`,
    `  Token:      ${platform.authUrl}/oauth/token`,
    `  API:        ${platform.apiUrl}`,
  ];
  if (args.seed !== false) {
    // With --db the store of an earlier run is still there (and installed into): reuse it.
    const kept = options.db ? platform.listStores().find((s) => s.name === 'Dev Store') : undefined;
    if (kept) {
      lines.push('', `Store "${kept.name}" (kept in ${options.db}): ${kept.storeId}`);
    } else {
      const store = platform.createStore({ name: 'Dev Store', seed: args.seed });
      lines.push('', `Seeded store "${store.name}": ${store.storeId}`);
    }
  }
  for (const app of registered) {
    lines.push(
      '',
      `App "${app.name}"`,
      `  STORE_APP_CLIENT_ID=${app.clientId}`,
      `  STORE_APP_CLIENT_SECRET=${app.clientSecret}`,
      `  STORE_APP_WEBHOOK_SECRET=${app.webhookSecret}`,
      `  STORE_AUTH_URL=${platform.authUrl}`,
      `  STORE_API_URL=${platform.apiUrl}`,
    );
  }
  lines.push('', 'Press Ctrl-C to stop.');
  io.stdout(`${lines.join('\n')}\n`);
  io.onStarted?.(platform);
  await (io.stopped ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    }));
  await platform.close();
  return 0;
}
