/**
 * The `store-app` commands, as a function of argv and environment so tests
 * run them in-process. Exit codes: 0 ok, 1 failure, 2 usage.
 */
import { parseArgs } from 'node:util';
import { ENCRYPTION_KEYS_SETTING, generateKey, parseEncryptionKeys } from '../crypto/index.js';
import { StorageError, StoreAppError } from '../errors/index.js';
import { createStorage, openBuiltinAdapter } from '../storage/index.js';
import { DATABASE_URL_SETTING, DEFAULT_DATABASE_URL } from '../storage/url.js';
import { kitVersion } from './version.js';

export interface CliIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env: Record<string, string | undefined>;
}

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
                retries each with backoff and resumes them at start.

Options:
  --database-url <url>  Database to use (default: $${DATABASE_URL_SETTING}, else ${DEFAULT_DATABASE_URL})
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
  // Same rule as the kit: an unset or blank DATABASE_URL means the default file.
  const target = databaseUrl ?? (io.env[DATABASE_URL_SETTING]?.trim() || DEFAULT_DATABASE_URL);
  try {
    switch (command) {
      case 'keygen':
        io.stdout(generateKey());
        return 0;
      case 'migrate':
        await migrate(target, io);
        return 0;
      case 'rotate-keys':
        return await rotateKeys(target, io);
      case 'purges':
        await listPurges(target, io);
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
    // The message only: a stack helps no operator, and kit messages are written to be read.
    const message =
      err instanceof StoreAppError ? err.message : `unexpected failure: ${(err as Error).message}`;
    io.stderr(`store-app ${command}: ${message}`);
    return 1;
  }
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

async function migrate(databaseUrl: string, io: CliIo): Promise<void> {
  const adapter = await openBuiltinAdapter({ databaseUrl });
  try {
    await adapter.migrate();
  } finally {
    await adapter.close();
  }
  io.stdout(`Migrations applied (${adapter.dialect}).`);
}

/** Pending purges of the outbox, one line each (no keys needed: no token is read). */
async function listPurges(databaseUrl: string, io: CliIo): Promise<void> {
  const adapter = await openBuiltinAdapter({ databaseUrl });
  try {
    const all = await adapter.purgeOutbox.due(
      new Date(Date.UTC(9999, 11, 31)),
      Number.MAX_SAFE_INTEGER,
    );
    // Sweeps follow purges that are done: not pending purges.
    const pending = all.filter((p) => p.kind !== 'sweep');
    if (pending.length === 0) {
      io.stdout('No pending purges.');
      return;
    }
    io.stdout(`${pending.length} pending purge(s):`);
    for (const p of pending) {
      io.stdout(
        `store ${p.storeId}  event ${p.eventId}  uninstalled ${p.eventAt.toISOString()}  ` +
          `attempts ${p.attempts}  next ${p.nextAttemptAt.toISOString()}  last error ${p.lastError ?? '-'}`,
      );
    }
  } finally {
    await adapter.close();
  }
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
async function rotateKeys(databaseUrl: string, io: CliIo): Promise<number> {
  const keys = parseEncryptionKeys(io.env[ENCRYPTION_KEYS_SETTING]);
  const storage = await createStorage({ databaseUrl, encryptionKeys: keys, migrate: false });
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
