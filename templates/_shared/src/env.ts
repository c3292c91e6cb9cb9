import { existsSync } from 'node:fs';

/**
 * Loads `.env` from the working directory when present. Variables already in
 * the environment win, so production settings and test overrides are never
 * replaced by the file.
 */
export function loadDotEnv(file = '.env'): void {
  if (existsSync(file)) process.loadEnvFile(file);
}

/** A setting the app needs is missing (the same code as the kit's own setting errors). */
export class SettingMissing extends Error {
  readonly code = 'CONFIG_INVALID';
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new SettingMissing(`${name} is not set. Add it to .env (see .env.example).`);
  }
  return value;
}
