/**
 * The `store-platform` command: runs the local Merchant Store Platform until Ctrl-C.
 * Prints its URLs and the credentials of any app registered with --app.
 */
import { readFileSync } from 'node:fs';
import { PlatformError } from './errors.js';
import type { FaultOptions } from './faults/index.js';
import {
  type AppCredentials,
  type Platform,
  type RegisterAppInput,
  startPlatform,
  type Tier,
} from './index.js';

const HELP = `Usage: store-platform [options]

Runs a local Merchant Store Platform (OAuth server, REST API, admin, dashboard).

Options:
  --port <n>         Port to listen on (default 4400; 0 = any free port)
  --host <host>      Interface to listen on (default 127.0.0.1; anything else
                     exposes client secrets to the network: a warning is printed)
  --allowed-host <name>
                     Another Host name to answer to (repeatable); requests with
                     any other Host get 421 (DNS-rebinding defence)
  --db <file>        SQLite file to keep data across restarts (default: in memory)
  --seed [n]         Create a store filled with sample data (n products, default 60)
  --tier <tier>      Tier of apps registered with --app: community, partner, elite
  --app <file.json>  Register an app from {name, redirectUri, webhookUrl, scopes,
                     clientId?, clientSecret?, webhookSecret?, appUrl?, tier?}
                     (repeatable; fixed credentials let an app's .env match)
  --faults <file>    Inject faults from a JSON file of startPlatform's \`faults\`
                     option, e.g. {"api": {"errorRate": 0.1, "latencyMs": 200}}
  -h, --help         Show this help
`;

interface CliArgs {
  port: number;
  host: string;
  allowedHosts: string[];
  db: string | undefined;
  seed: number | boolean;
  tier: Tier | undefined;
  apps: string[];
  faults: string | undefined;
}

class UsageError extends Error {}

function parse(argv: string[]): CliArgs | 'help' {
  const out: CliArgs = {
    port: 4400,
    host: '127.0.0.1',
    allowedHosts: [],
    db: undefined,
    seed: false,
    tier: undefined,
    apps: [],
    faults: undefined,
  };
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
    switch (flag) {
      case '-h':
      case '--help':
        return 'help';
      case '--port': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 0 || n > 65535)
          throw new UsageError('--port must be 0..65535');
        out.port = n;
        break;
      }
      case '--host':
        out.host = value();
        break;
      case '--allowed-host':
        out.allowedHosts.push(value());
        break;
      case '--db':
        out.db = value();
        break;
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
      default:
        throw new UsageError(`unknown option ${flag}`);
    }
  }
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
}

/** The CLI without process globals, so tests run it in-process. Resolves to the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let args: CliArgs | 'help';
  try {
    args = parse(argv);
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
  let platform: Platform;
  let configs: RegisterAppInput[];
  try {
    configs = args.apps.map((f) => readAppConfig(f, args.tier));
    const faults = args.faults
      ? (readJsonObject('--faults', args.faults) as FaultOptions)
      : undefined;
    platform = await startPlatform({
      port: args.port,
      host: args.host,
      allowedHosts: args.allowedHosts,
      ...(args.db ? { db: args.db } : {}),
      ...(faults ? { faults } : {}),
    });
  } catch (err) {
    if (err instanceof UsageError || err instanceof PlatformError) {
      io.stderr(`store-platform: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const registered: Array<AppCredentials & { name: string }> = [];
  try {
    for (const config of configs)
      registered.push({ ...platform.registerApp(config), name: config.name });
  } catch (err) {
    await platform.close();
    io.stderr(`store-platform: ${(err as Error).message}\n`);
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
    const kept = args.db ? platform.listStores().find((s) => s.name === 'Dev Store') : undefined;
    if (kept) {
      lines.push('', `Store "${kept.name}" (kept in ${args.db}): ${kept.storeId}`);
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
