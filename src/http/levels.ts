import type { StoreAppLogger } from './options.js';

/** The logger method of each pino level number; trace and fatal may fall back (see the loggers). */
export const METHOD_OF_LEVEL: Record<number, keyof StoreAppLogger> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};
