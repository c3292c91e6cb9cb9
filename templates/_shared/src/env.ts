import { existsSync } from 'node:fs';

/**
 * Loads `.env` from the working directory when present. Variables already in
 * the environment win, so production settings and test overrides are never
 * replaced by the file.
 */
export function loadDotEnv(file = '.env'): void {
  if (existsSync(file)) process.loadEnvFile(file);
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set. Add it to .env (see .env.example).`);
  }
  return value;
}
