/**
 * The kit's logger where pino does not run (Cloudflare Workers): the same
 * records (`level`, `time`, `module`, bindings, `msg`), the same redaction of
 * every credential-bearing key (./redact.ts: at the top level and two levels
 * down) and the same error serialisation (`errorCode` beside `code`), as one
 * JSON line per record on `console.log` (Workers Logs), or handed to the
 * app's `logger.instance` as `method(object, message)`. Only the methods the
 * kit calls: `child`, `trace` … `fatal`, `level`.
 */
import type { Logger } from 'pino';
import { METHOD_OF_LEVEL } from './levels.js';
import type { ResolvedHttpOptions, StoreAppLogger } from './options.js';
import { REDACT_CENSOR, SECRET_KEYS } from './redact.js';

const LEVELS: Record<string, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};
const SECRET = new Set(SECRET_KEYS);

/** An error as pino's serializer writes it, with its stable code copied to `errorCode`. */
function serializeError(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { type: err.name, message: err.message, stack: err.stack };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') {
    out.code = code;
    out.errorCode = code;
  }
  return out;
}

/** A copy of `value` with every secret key censored, `depth` levels down. */
function redact(value: unknown, depth: number): unknown {
  if (value instanceof Error) return redact(serializeError(value), depth);
  if (value === null || typeof value !== 'object' || depth < 0) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth - 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET.has(k) ? REDACT_CENSOR : redact(v, depth - 1);
  }
  return out;
}

type Write = (level: number, record: Record<string, unknown>, msg: string | undefined) => void;

function writerFor(instance: StoreAppLogger | undefined): Write {
  if (instance === undefined) {
    return (level, record, msg) => {
      console.log(JSON.stringify({ level, time: Date.now(), ...record, msg }));
    };
  }
  return (level, record, msg) => {
    let method = METHOD_OF_LEVEL[level] ?? 'info';
    if (method === 'trace' && typeof instance.trace !== 'function') method = 'debug';
    if (method === 'fatal' && typeof instance.fatal !== 'function') method = 'error';
    const fn = instance[method] as ((obj: object, msg?: string) => unknown) | undefined;
    try {
      if (msg === undefined) fn?.call(instance, record);
      else fn?.call(instance, record, msg);
    } catch {
      // The app's logger failed; the kit's work goes on.
    }
  };
}

function make(min: number, levelName: string, bindings: Record<string, unknown>, write: Write) {
  const at =
    (level: number) =>
    (objOrMsg?: unknown, msg?: string): void => {
      if (level < min) return;
      const fields =
        typeof objOrMsg === 'string' || objOrMsg === undefined
          ? {}
          : objOrMsg instanceof Error
            ? { err: objOrMsg }
            : (objOrMsg as Record<string, unknown>);
      const text = typeof objOrMsg === 'string' ? objOrMsg : msg;
      write(level, redact({ ...bindings, ...fields }, 3) as Record<string, unknown>, text);
    };
  const logger = {
    level: levelName,
    trace: at(10),
    debug: at(20),
    info: at(30),
    warn: at(40),
    error: at(50),
    fatal: at(60),
    isLevelEnabled: (name: string) => (LEVELS[name] ?? 0) >= min,
    child: (more: Record<string, unknown>) => make(min, levelName, { ...bindings, ...more }, write),
  };
  return logger;
}

/** The kit's root logger without pino (Workers): JSON lines on the console, or the app's logger. */
export function createConsoleLogger(options: ResolvedHttpOptions['logger']): Logger {
  const levelName = typeof options.level === 'string' ? options.level : 'info';
  const min = LEVELS[levelName] ?? LEVELS.info;
  const instance = options.instance as StoreAppLogger | undefined;
  return make(
    min as number,
    levelName,
    { module: 'store-app-kit' },
    writerFor(instance),
  ) as unknown as Logger;
}
