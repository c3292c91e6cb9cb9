/**
 * Which SQLite driver loads on the runtime the kit runs on, behind one small
 * connection interface (./adapter.ts opens the file, sets the pragmas and
 * runs the transactions on it, the same on all three):
 * - Node: better-sqlite3 (an optional peer) with Drizzle's better-sqlite3 driver.
 * - Bun: Bun's built-in `bun:sqlite` with Drizzle's bun-sqlite driver
 *   (better-sqlite3's addon does not load on Bun).
 * - Deno: Deno's built-in `node:sqlite` (`DatabaseSync`, Deno 2.2+), given to
 *   Drizzle's better-sqlite3 driver through a few lines of glue below:
 *   better-sqlite3's addon is built on the V8/NAN addon API, which Deno does
 *   not load (it loads only Node-API addons), and Drizzle 0.45 has no
 *   node:sqlite driver of its own.
 * Each is synchronous, so the kit's in-process queue and `BEGIN IMMEDIATE`
 * transactions work alike on all three.
 */
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { ConfigError } from '../errors/index.js';
import { DATABASE_URL_SETTING } from './url.js';

/** What the kit needs of an open SQLite connection, whichever driver opened it. */
export interface SqliteConnection {
  exec(statement: string): void;
  /** Runs `PRAGMA <statement>` and returns its rows. */
  pragma(statement: string): unknown[];
  readonly open: boolean;
  readonly inTransaction: boolean;
  close(): void;
}

export interface SqliteDriver {
  /** For messages: `better-sqlite3`, `bun:sqlite` or `node:sqlite`. */
  readonly name: string;
  /** Opens (creating) the file; throws the driver's own error. */
  open(filename: string): SqliteConnection;
  /** Drizzle on the connection (the better-sqlite3-typed API the repositories use). */
  drizzle(connection: SqliteConnection): BetterSQLite3Database;
  /** Drizzle's synchronous SQLite migrator of that driver. */
  migrate(
    db: BetterSQLite3Database,
    config: { migrationsFolder: string; migrationsTable: string },
  ): void;
}

/** `Bun` or `Deno` when the kit runs there. */
export function nonNodeRuntime(): 'Bun' | 'Deno' | undefined {
  if ('Bun' in globalThis) return 'Bun';
  if ('Deno' in globalThis) return 'Deno';
  return undefined;
}

// Specifiers in variables: Node's type definitions have neither module, and a
// bundler must not try to resolve them for Node.
const BUN_SQLITE = 'bun:sqlite';
const NODE_SQLITE = 'node:sqlite';

/** Loads the SQLite driver of this runtime (see the file's comment). */
export async function loadRuntimeSqliteDriver(
  loadBetterSqlite3: () => Promise<SqliteDriver>,
): Promise<SqliteDriver> {
  const runtime = nonNodeRuntime();
  if (runtime === 'Bun') return loadBunDriver();
  if (runtime === 'Deno') return loadDenoDriver();
  return loadBetterSqlite3();
}

interface BunDatabase {
  exec(sql: string): void;
  query(sql: string): { all(): unknown[] };
  readonly inTransaction: boolean;
  close(): void;
}

async function loadBunDriver(): Promise<SqliteDriver> {
  const [{ Database }, orm, migrator] = await Promise.all([
    import(BUN_SQLITE) as Promise<{ Database: new (filename: string) => BunDatabase }>,
    import('drizzle-orm/bun-sqlite'),
    import('drizzle-orm/bun-sqlite/migrator'),
  ]);
  const native = new WeakMap<SqliteConnection, BunDatabase>();
  return {
    name: 'bun:sqlite',
    open(filename) {
      const db = new Database(filename);
      let open = true;
      const connection: SqliteConnection = {
        exec: (statement) => db.exec(statement),
        pragma: (statement) => db.query(`PRAGMA ${statement}`).all(),
        get open() {
          return open;
        },
        get inTransaction() {
          return open && db.inTransaction;
        },
        close() {
          open = false;
          db.close();
        },
      };
      native.set(connection, db);
      return connection;
    },
    drizzle: (connection) =>
      orm.drizzle(native.get(connection) as never) as unknown as BetterSQLite3Database,
    migrate: (db, config) => migrator.migrate(db as never, config),
  };
}

/** Deno's `node:sqlite` statement (Node's API: StatementSync). */
interface NodeSqliteStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  all(...params: unknown[]): unknown[];
  get(...params: unknown[]): unknown;
  setReturnArrays(enabled: boolean): void;
}
interface NodeSqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): NodeSqliteStatement;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
  close(): void;
}

/** node:sqlite reports `ERR_SQLITE_ERROR` with a numeric `errcode`; the kit reads better-sqlite3's `SQLITE_*` codes. */
const PRIMARY_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
  19: 'SQLITE_CONSTRAINT',
  26: 'SQLITE_NOTADB',
};

function withSqliteCode<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const errcode = (err as { errcode?: unknown } | null)?.errcode;
    if (typeof errcode === 'number' && PRIMARY_CODES[errcode & 0xff]) {
      try {
        (err as { code?: unknown }).code = PRIMARY_CODES[errcode & 0xff];
      } catch {
        // A frozen error keeps its own code.
      }
    }
    throw err;
  }
}

/**
 * better-sqlite3's API, as much as Drizzle's better-sqlite3 driver calls, on
 * node:sqlite: `prepare` with `run`/`all`/`get`/`raw()`, and `transaction`.
 */
function betterSqlite3Glue(db: NodeSqliteDatabase) {
  const prepare = (sql: string) => {
    const stmt = withSqliteCode(() => db.prepare(sql));
    const arrays = <T>(fn: () => T): T => {
      stmt.setReturnArrays(true);
      try {
        return withSqliteCode(fn);
      } finally {
        stmt.setReturnArrays(false);
      }
    };
    return {
      run: (...params: unknown[]) => withSqliteCode(() => stmt.run(...params)),
      all: (...params: unknown[]) => withSqliteCode(() => stmt.all(...params)),
      get: (...params: unknown[]) => withSqliteCode(() => stmt.get(...params)),
      raw: () => ({
        all: (...params: unknown[]) => arrays(() => stmt.all(...params)),
        get: (...params: unknown[]) => arrays(() => stmt.get(...params)),
      }),
    };
  };
  // better-sqlite3's `transaction(fn)`: BEGIN <behavior> … COMMIT, a savepoint when nested.
  let depth = 0;
  const transaction = (fn: (...args: unknown[]) => unknown) => {
    const run =
      (behavior: string) =>
      (...args: unknown[]) => {
        const name = `drizzle_sp_${++depth}`;
        const nested = db.isTransaction;
        withSqliteCode(() => db.exec(nested ? `SAVEPOINT ${name}` : `BEGIN ${behavior}`));
        try {
          const result = fn(...args);
          withSqliteCode(() => db.exec(nested ? `RELEASE ${name}` : 'COMMIT'));
          return result;
        } catch (err) {
          if (db.isTransaction) {
            db.exec(nested ? `ROLLBACK TO ${name}; RELEASE ${name}` : 'ROLLBACK');
          }
          throw err;
        } finally {
          depth--;
        }
      };
    return Object.assign(run('DEFERRED'), {
      deferred: run('DEFERRED'),
      immediate: run('IMMEDIATE'),
      exclusive: run('EXCLUSIVE'),
    });
  };
  return { prepare, transaction };
}

async function loadDenoDriver(): Promise<SqliteDriver> {
  let DatabaseSync: new (filename: string) => NodeSqliteDatabase;
  try {
    ({ DatabaseSync } = (await import(NODE_SQLITE)) as {
      DatabaseSync: new (filename: string) => NodeSqliteDatabase;
    });
  } catch (cause) {
    throw new ConfigError(
      DATABASE_URL_SETTING,
      'selects SQLite, and this Deno has no node:sqlite (Deno 2.2 or later has it): ' +
        'upgrade Deno, or use Postgres (DATABASE_URL=postgres://…), see docs/runtimes.md',
      { cause },
    );
  }
  const [orm, migrator] = await Promise.all([
    import('drizzle-orm/better-sqlite3'),
    import('drizzle-orm/better-sqlite3/migrator'),
  ]);
  const native = new WeakMap<SqliteConnection, NodeSqliteDatabase>();
  return {
    name: 'node:sqlite',
    open(filename) {
      const db = withSqliteCode(() => new DatabaseSync(filename));
      const connection: SqliteConnection = {
        exec: (statement) => withSqliteCode(() => db.exec(statement)),
        pragma: (statement) => withSqliteCode(() => db.prepare(`PRAGMA ${statement}`).all()),
        get open() {
          return db.isOpen;
        },
        get inTransaction() {
          return db.isOpen && db.isTransaction;
        },
        close: () => db.close(),
      };
      native.set(connection, db);
      return connection;
    },
    drizzle: (connection) => orm.drizzle(betterSqlite3Glue(native.get(connection)!) as never),
    migrate: (db, config) => migrator.migrate(db, config),
  };
}
