import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors/index.js';
import type { Dialect } from './types.js';

export const DATABASE_URL_SETTING = 'DATABASE_URL';
/** The database used when `DATABASE_URL` is unset (the kit and the CLI alike). */
export const DEFAULT_DATABASE_URL = './data/store-app.db';

export type DatabaseTarget =
  | { dialect: Extract<Dialect, 'sqlite'> /** Absolute path, or ':memory:'. */; filename: string }
  | { dialect: Extract<Dialect, 'postgres'>; url: string };

/**
 * Reads a `DATABASE_URL`: `postgres://…` / `postgresql://…` for Postgres;
 * `file:./x.db`, `file:///abs/x.db`, a plain path or `:memory:` for SQLite.
 * Anything else (another scheme, empty) is a ConfigError naming the setting.
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
  if (value === ':memory:' || value === 'file::memory:') {
    return { dialect: 'sqlite', filename: ':memory:' };
  }
  if (/^file:\/\//i.test(value)) {
    try {
      return { dialect: 'sqlite', filename: fileURLToPath(value.split('?')[0] ?? value) };
    } catch {
      throw new ConfigError(setting, 'is not a valid file:// URL; use `file:./path/to/app.db`');
    }
  }
  if (/^file:/i.test(value)) {
    const path = (value.slice(5).split('?')[0] ?? '').trim();
    if (path === '') throw new ConfigError(setting, '`file:` needs a path, e.g. `file:./app.db`');
    return { dialect: 'sqlite', filename: isAbsolute(path) ? path : resolve(path) };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    // Name only the scheme: the rest of a URL may hold a password.
    const scheme = value.slice(0, value.indexOf(':'));
    throw new ConfigError(
      setting,
      `scheme "${scheme}:" is not supported; use \`postgres://…\` or a SQLite path (\`file:./app.db\`)`,
    );
  }
  return { dialect: 'sqlite', filename: isAbsolute(value) ? value : resolve(value) };
}
