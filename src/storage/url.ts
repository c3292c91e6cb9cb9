import { ConfigError } from '../errors/index.js';
import type { Dialect } from './types.js';

type Builtin = (id: string) => unknown;

/**
 * `node:path` and `node:url`, loaded only for a SQLite file (so the module
 * imports no Node module: a Worker's config reads this file too). A runtime
 * without them (Workers) keeps the path as written: it has no built-in
 * storage to open it with (its kit takes an adapter), and the default
 * `DATABASE_URL` is parsed there too.
 */
function fileApis() {
  const load = (globalThis as { process?: { getBuiltinModule?: Builtin } }).process
    ?.getBuiltinModule;
  const path = load?.('node:path') as typeof import('node:path') | undefined;
  const url = load?.('node:url') as typeof import('node:url') | undefined;
  if (!path || !url) {
    return {
      isAbsolute: (p: string) => p.startsWith('/'),
      resolve: (p: string) => p,
      fileURLToPath: (u: string) => decodeURIComponent(new URL(u).pathname),
    };
  }
  return { isAbsolute: path.isAbsolute, resolve: path.resolve, fileURLToPath: url.fileURLToPath };
}

export const DATABASE_URL_SETTING = 'DATABASE_URL';
/** The database used when `DATABASE_URL` is unset (the kit and the CLI alike). */
export const DEFAULT_DATABASE_URL = './data/store-app.db';

export type DatabaseTarget =
  | { dialect: Extract<Dialect, 'sqlite'> /** Absolute path, or ':memory:'. */; filename: string }
  | { dialect: Extract<Dialect, 'postgres'>; url: string }
  /** `url` is always `mysql://` (a `mariadb://` URL is rewritten; the protocol is the same). */
  | { dialect: Extract<Dialect, 'mysql'>; url: string };

/**
 * Reads a `DATABASE_URL`: `postgres://…` / `postgresql://…` for Postgres;
 * `mysql://…` / `mariadb://…` (with a host and a database) for MySQL/MariaDB;
 * `file:./x.db`, `file:///abs/x.db`, a plain path or `:memory:` for SQLite.
 * Anything else (another scheme, a malformed postgres URL such as
 * `postgres//host/db`, a connection string without its scheme, empty) is a
 * ConfigError naming the setting, never a SQLite file named after it.
 */
export function parseDatabaseUrl(url: string, setting = DATABASE_URL_SETTING): DatabaseTarget {
  const value = url.trim();
  if (value === '') {
    throw new ConfigError(
      setting,
      'is empty; use a SQLite path such as `file:./data/store-app.db` or a `postgres://` URL',
    );
  }
  if (/^postgres(ql)?:\/\//i.test(value)) {
    try {
      new URL(value);
    } catch {
      throw new ConfigError(setting, 'is not a valid postgres:// URL');
    }
    return { dialect: 'postgres', url: value };
  }
  if (/^(mysql|mariadb):\/\//i.test(value)) {
    return { dialect: 'mysql', url: parseMysqlUrl(value, setting) };
  }
  if (value === ':memory:' || value === 'file::memory:') {
    return { dialect: 'sqlite', filename: ':memory:' };
  }
  if (/^file:\/\//i.test(value)) {
    const { fileURLToPath } = fileApis();
    try {
      return { dialect: 'sqlite', filename: fileURLToPath(value.split('?')[0] ?? value) };
    } catch {
      throw new ConfigError(setting, 'is not a valid file:// URL; use `file:./path/to/app.db`');
    }
  }
  if (/^file:/i.test(value)) {
    const path = (value.slice(5).split('?')[0] ?? '').trim();
    if (path === '') throw new ConfigError(setting, '`file:` needs a path, e.g. `file:./app.db`');
    const { isAbsolute, resolve } = fileApis();
    return { dialect: 'sqlite', filename: isAbsolute(path) ? path : resolve(path) };
  }
  // Anything that looks like a connection URL must parse as one: a typo such
  // as `postgres//…` or `postgres:/…` would otherwise become a SQLite file
  // named after the URL, and the app would run on an empty database.
  if (
    /^(postgres(ql)?|pg)(:|\/\/)/i.test(value) ||
    /^[^/\\\s@]+@[^/\\\s]+\/[^/\\\s]*$/.test(value)
  ) {
    throw new ConfigError(
      setting,
      'looks like a Postgres connection string but is not a postgres:// URL; use `postgres://user:password@host:5432/database`, or a SQLite path such as `file:./data/app.db`',
    );
  }
  if (/^(mysql|mariadb)(:|\/\/)/i.test(value)) {
    throw new ConfigError(
      setting,
      'looks like a MySQL connection string but is not a mysql:// URL; use `mysql://user:password@host:3306/database`',
    );
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1];
  if (scheme !== undefined && !/^[a-z]:[\\/]/i.test(value)) {
    // Name only the scheme: the rest of a URL may hold a password.
    throw new ConfigError(
      setting,
      `scheme "${scheme.slice(0, 32)}:" is not supported; use \`postgres://…\`, \`mysql://…\` or a SQLite path (\`file:./app.db\`)`,
    );
  }
  const { isAbsolute, resolve } = fileApis();
  return { dialect: 'sqlite', filename: isAbsolute(value) ? value : resolve(value) };
}

/**
 * Checks a `mysql://` / `mariadb://` URL and returns it as `mysql://`. The
 * messages never quote the URL: it may hold a password.
 */
function parseMysqlUrl(value: string, setting: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(
      setting,
      'is not a valid mysql:// URL; use `mysql://user:password@host:3306/database`',
    );
  }
  if (url.hostname === '') {
    throw new ConfigError(setting, 'names no host; use `mysql://user:password@host:3306/database`');
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) {
    throw new ConfigError(
      setting,
      'names no database (or more than one path segment); use `mysql://user:password@host:3306/database`',
    );
  }
  return `mysql://${value.slice(value.indexOf('://') + 3)}`;
}
