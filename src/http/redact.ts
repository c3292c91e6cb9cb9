/**
 * What the kit's loggers redact, shared by the pino logger (./logger.ts) and
 * the console logger of runtimes without pino (./console-logger.ts).
 */

/** Keys whose values never reach a log line (at the top level and two levels down). */
export const SECRET_KEYS: readonly string[] = [
  'authorization',
  'cookie',
  'set-cookie',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'idToken',
  'id_token',
  'token',
  'clientSecret',
  'client_secret',
  'secret',
  'password',
  'code',
  'codeVerifier',
  'code_verifier',
  'verifier',
  'state',
  'browserBinding',
  'launch',
  'encryptionKeys',
  'sessionSecret',
];

export const REDACT_CENSOR = '[redacted]';
