/** The logger the kit's modules take: the slice of pino (or any logger) they call. */

type LogFn = (obj: object, msg?: string) => void;

/** The slice of a pino logger the webhook and purge modules use. */
export interface MinimalLogger {
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}
