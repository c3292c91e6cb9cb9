/**
 * The `store-app` commands, as a function of argv and environment so tests
 * run them in-process. Exit codes: 0 ok, 1 failure, 2 usage.
 *
 * Settings are read the way a generated app reads them: the environment,
 * then `.env` in the working directory for what the environment leaves
 * unset. Every command that opens a database first says which one, and
 * where that came from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs, parseEnv } from 'node:util';
import { ENCRYPTION_KEYS_SETTING, generateKey, parseEncryptionKeys } from '../crypto/index.js';
import { ConfigError, StorageError, StoreAppError } from '../errors/index.js';
import type { PendingPurgeRecord } from '../storage/contract.js';
import { createStorage, openBuiltinAdapter } from '../storage/index.js';
import {
  DATABASE_URL_SETTING,
  type DatabaseTarget,
  DEFAULT_DATABASE_URL,
  parseDatabaseUrl,
} from '../storage/url.js';
import { kitVersion } from './version.js';

export interface CliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env: Record<string, string | undefined>;
  /** Where `.env` is looked for and relative SQLite paths resolve. @default process.cwd() */
  cwd?: string;
}

/** The file the CLI reads settings from, in the working directory (as the generated app does). */
export const DOT_ENV = '.env';

export const USAGE = `Usage: store-app <command> [options]

Commands:
  keygen        Print a new encryption key (base64url, 32 bytes) for ${ENCRYPTION_KEYS_SETTING}.
  migrate       Apply the kit's database migrations to ${DATABASE_URL_SETTING}.
  rotate-keys   Re-encrypt every stored token with the newest key
                (the first of ${ENCRYPTION_KEYS_SETTING}; older keys must still be listed).
                Row by row and idempotent: safe to interrupt and run again. Rows it
                cannot decrypt are skipped and listed by store id; then it exits 1.
  purges        List uninstall purges recorded but not done yet (normally none): store id,
                event id, attempts, next attempt, last error code. The running app
                retries each with backoff and resumes them at start. Then the sweeps
                scheduled after purges that are done (a second pass at the purge
                horizon for what requests in flight wrote since).

Options:
  --database-url <url>  Database to use (default: $${DATABASE_URL_SETTING}, else ${DEFAULT_DATABASE_URL})

Settings come from the environment, then from ${DOT_ENV} in the working directory for
those the environment leaves unset (as the generated app reads them). Each command
that opens a database names it first. Only \`migrate\` creates a SQLite file; the
other commands refuse a file that does not exist.
  -h, --help            Show this help
  -v, --version         Print the version of store-app-kit

Rotating keys: put the new key first, keep the old ones after it, deploy, run
\`store-app rotate-keys\`, then remove the old keys.`;

class UsageError extends Error {}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.stderr(`store-app: ${(err as Error).message}`);
    io.stderr('Run `store-app --help` for usage.');
    return 2;
  }
  const { command, databaseUrl, help, version } = parsed;
  if (help || command === 'help') {
    io.stdout(USAGE);
    return 0;
  }
  if (version) {
    io.stdout(kitVersion());
    return 0;
  }
  const cwd = io.cwd ?? process.cwd();
  try {
    const settings = readSettings(io.env, cwd);
    switch (command) {
      case 'keygen':
        io.stdout(generateKey());
        return 0;
      case 'migrate':
        await migrate(openDatabase(databaseUrl, settings, cwd, 'create', io), io);
        return 0;
      case 'rotate-keys': {
        // The keys first: a mistake there is found without touching the database.
        const keys = parseEncryptionKeys(settings.get(ENCRYPTION_KEYS_SETTING)?.value);
        return await rotateKeys(openDatabase(databaseUrl, settings, cwd, 'existing', io), keys, io);
      }
      case 'purges':
        await listPurges(openDatabase(databaseUrl, settings, cwd, 'existing', io), io);
        return 0;
      default:
        throw new UsageError(
          command === undefined ? 'no command given' : `unknown command "${command}"`,
        );
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`store-app: ${err.message}`);
      io.stderr('Run `store-app --help` for usage.');
      return 2;
    }
    // Code and message, one line: a stack helps no operator, and kit messages are written to
    // be read.
    const message =
      err instanceof StoreAppError
        ? `${err.code}: ${err.message}`
        : `unexpected failure: ${(err as Error).message}`;
    io.stderr(`store-app ${command}: ${message}`);
    return 1;
  }
}

/** A setting's value and where it came from (for the line that names the database). */
interface Setting {
  value: string;
  from: string;
}

interface Settings {
  get(name: string): Setting | undefined;
}

/**
 * The environment, then `.env` in `cwd` for what it leaves unset: the generated app's rule
 * (its `loadDotEnv`), so the CLI run in the app's folder opens the app's database.
 */
function readSettings(env: CliIo['env'], cwd: string): Settings {
  const file = join(cwd, DOT_ENV);
  const dotEnv = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {};
  return {
    get(name) {
      const fromEnv = env[name];
      if (fromEnv !== undefined && fromEnv.trim() !== '') {
        return { value: fromEnv, from: `${name} in the environment` };
      }
      const fromFile = dotEnv[name];
      if (fromFile !== undefined && fromFile.trim() !== '') {
        return { value: fromFile, from: `${name} in ${DOT_ENV}` };
      }
      return undefined;
    },
  };
}

/** A URL to print: any password replaced. */
function shown(target: DatabaseTarget): string {
  if (target.dialect === 'sqlite') return target.filename;
  const url = new URL(target.url);
  if (url.password) url.password = '***';
  return url.href;
}

const DIALECT_NAME = { sqlite: 'SQLite', postgres: 'Postgres', mysql: 'MySQL/MariaDB' } as const;

/**
 * The database a command works on: `--database-url`, else DATABASE_URL (environment, then
 * `.env`), else the kit's default; named on stdout with where it came from. A SQLite file that
 * does not exist is refused (naming the file and the setting) unless the command creates it:
 * an empty file made by a typo'd or missing setting would read as "nothing there".
 */
function openDatabase(
  flag: string | undefined,
  settings: Settings,
  cwd: string,
  mode: 'create' | 'existing',
  io: CliIo,
): DatabaseTarget {
  const setting =
    flag !== undefined && flag.trim() !== ''
      ? { value: flag, from: '--database-url' }
      : (settings.get(DATABASE_URL_SETTING) ?? {
          value: DEFAULT_DATABASE_URL,
          from: `the default: ${DATABASE_URL_SETTING} is not set in the environment or ${DOT_ENV}`,
        });
  const parsed = parseDatabaseUrl(setting.value);
  // Relative SQLite paths resolve against the working directory the CLI was given.
  const target: DatabaseTarget =
    parsed.dialect === 'sqlite' && parsed.filename !== ':memory:'
      ? { dialect: 'sqlite', filename: sqliteFile(setting.value, parsed.filename, cwd) }
      : parsed;
  const exists = target.dialect !== 'sqlite' || existsSync(target.filename);
  if (!exists && mode === 'existing') {
    throw new ConfigError(
      DATABASE_URL_SETTING,
      `no SQLite database at ${target.filename} (${setting.from}); nothing was created. ` +
        `Run this in the app's folder (its ${DOT_ENV} names the database), or set ` +
        `${DATABASE_URL_SETTING} or --database-url to the app's database.`,
    );
  }
  io.stdout(
    `Database: ${shown(target)} (${DIALECT_NAME[target.dialect]}; ${setting.from})` +
      (exists ? '' : ' — a new file'),
  );
  return target;
}

/** A SQLite setting's file, a relative path resolved against `cwd` (`file://` URLs are absolute). */
function sqliteFile(value: string, parsed: string, cwd: string): string {
  const v = value.trim();
  if (/^file:\/\//i.test(v)) return parsed;
  return resolve(cwd, /^file:/i.test(v) ? (v.slice(5).split('?')[0] ?? '').trim() : v);
}

/** The URL to hand to the storage layer for a target. */
function urlOf(target: DatabaseTarget): string {
  return target.dialect === 'sqlite' ? target.filename : target.url;
}

function parse(argv: readonly string[]) {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      'database-url': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  if (positionals.length > 1) throw new Error(`unexpected argument "${positionals[1]}"`);
  return {
    command: positionals[0],
    databaseUrl: values['database-url'],
    help: values.help === true,
    version: values.version === true,
  };
}

async function migrate(target: DatabaseTarget, io: CliIo): Promise<void> {
  const adapter = await openBuiltinAdapter({ databaseUrl: urlOf(target) });
  try {
    await adapter.migrate();
  } finally {
    await adapter.close();
  }
  io.stdout(`Migrations applied (${adapter.dialect}).`);
}

/**
 * What the purge outbox holds, one line each (no keys needed: no token is read): uninstall
 * purges not done yet, then the sweeps scheduled after purges that are done.
 */
async function listPurges(target: DatabaseTarget, io: CliIo): Promise<void> {
  const adapter = await openBuiltinAdapter({ databaseUrl: urlOf(target) });
  try {
    const all = await adapter.purgeOutbox.due(
      new Date(Date.UTC(9999, 11, 31)),
      Number.MAX_SAFE_INTEGER,
    );
    const pending = all.filter((p) => p.kind !== 'sweep');
    const sweeps = all.filter((p) => p.kind === 'sweep');
    if (pending.length === 0) io.stdout('No pending purges.');
    else {
      io.stdout(`${pending.length} pending purge(s):`);
      for (const p of pending) {
        io.stdout(
          `${entryLine(p)}  attempts ${p.attempts}  next ${p.nextAttemptAt.toISOString()}  ` +
            `last error ${p.lastError ?? '-'}`,
        );
      }
    }
    if (sweeps.length > 0) {
      io.stdout(
        `${sweeps.length} sweep(s) scheduled: the purge is done; a second pass at the purge ` +
          'horizon deletes what requests in flight at the purge wrote for the store since:',
      );
      for (const p of sweeps)
        io.stdout(`${entryLine(p)}  sweep at ${p.nextAttemptAt.toISOString()}`);
    }
  } finally {
    await adapter.close();
  }
}

function entryLine(p: PendingPurgeRecord): string {
  return `store ${p.storeId}  event ${p.eventId}  uninstalled ${p.eventAt.toISOString()}`;
}

/** Why one row could not be re-encrypted: the error code and kit message, never ciphertext or keys. */
function describeRowFailure(err: unknown): string {
  if (err instanceof StoreAppError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.name : 'unknown error';
}

/**
 * Exit 0 when every row is on the newest key, 1 when some could not be
 * decrypted (they are listed; the rest were still re-encrypted). A database
 * failure stops the run: rerunning resumes, rows already done are skipped.
 */
async function rotateKeys(
  target: DatabaseTarget,
  keys: ReturnType<typeof parseEncryptionKeys>,
  io: CliIo,
): Promise<number> {
  const storage = await createStorage({
    databaseUrl: urlOf(target),
    encryptionKeys: keys,
    migrate: false,
  });
  try {
    const ids = await storage.installations.listStoreIds();
    let changed = 0;
    const failed: string[] = [];
    for (const id of ids) {
      try {
        if (await storage.installations.reencrypt(id)) changed++;
      } catch (err) {
        if (err instanceof StorageError || !(err instanceof StoreAppError)) throw err;
        failed.push(id);
        io.stderr(
          `store-app rotate-keys: store ${id} not re-encrypted (${describeRowFailure(err)})`,
        );
      }
    }
    io.stdout(`Newest key id: ${keys[0]!.kid}`);
    io.stdout(
      `Installations: ${ids.length} scanned, ${changed} re-encrypted, ` +
        `${ids.length - changed - failed.length} already current, ${failed.length} failed.`,
    );
    if (failed.length > 0) {
      io.stderr(
        `store-app rotate-keys: ${failed.length} installation(s) could not be decrypted with ` +
          `${ENCRYPTION_KEYS_SETTING}; add the key they were written with back (after the newest) ` +
          'and run again, or reinstall those stores.',
      );
      return 1;
    }
    return 0;
  } finally {
    await storage.close();
  }
}
