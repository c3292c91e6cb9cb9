import type { Logger } from 'pino';

/** A child logger for one store's work. */
export function storeLogger(log: Logger, storeId: string): Logger {
  return log.child({ storeId });
}
