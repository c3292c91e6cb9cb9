/**
 * The kit's pino logger (also in front of any other logger the app gives):
 * redaction of every credential-bearing field, one
 * child per request (request id, method, path: never the query, which holds
 * codes and state) and one per store.
 */
import { type DestinationStream, type Logger, pino } from 'pino';
import { METHOD_OF_LEVEL } from './levels.js';
import type { ResolvedHttpOptions, StoreAppLogger } from './options.js';
import { REDACT_CENSOR, SECRET_KEYS } from './redact.js';

export { REDACT_CENSOR } from './redact.js';

/**
 * pino redaction paths: each secret key at the top level and up to two
 * levels down (`req.headers.authorization`, `err.params.code`, …). Paths are
 * fixed, so redaction stays fast.
 */
export const REDACT_PATHS: string[] = SECRET_KEYS.flatMap((k) => {
  const key = /^[A-Za-z_$][\w$]*$/.test(k) ? k : `["${k}"]`;
  const dot = key.startsWith('[') ? '' : '.';
  return [key, `*${dot}${key}`, `*.*${dot}${key}`];
});

/**
 * `code` is redacted everywhere (it may be an authorization code), which
 * would also hide every error's stable code (`err.code`): copy it to
 * `errorCode`, a key no secret uses.
 */
function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown;
  const code = (err as { code?: unknown } | null)?.code;
  if (
    out !== null &&
    typeof out === 'object' &&
    (typeof code === 'string' || typeof code === 'number')
  ) {
    (out as Record<string, unknown>).errorCode = code;
  }
  return out;
}

/** The kit's root logger: a child of the app's pino logger, or a kit-made pino logger. */
export function createKitLogger(options: ResolvedHttpOptions['logger']): Logger {
  const redact = { paths: REDACT_PATHS, censor: REDACT_CENSOR };
  const serializers = { err: serializeError };
  const base = { module: 'store-app-kit' };
  const instance = options.instance;
  if (instance && isPino(instance)) {
    return instance.child(base, { redact, level: options.level, serializers });
  }
  const opts = { level: options.level, redact, base, serializers };
  // Any other logger gets the records pino has already serialised and
  // redacted: one redaction, the same for every logger, applied before the
  // app's code sees a value.
  if (instance) return pino(opts, forwardTo(instance));
  return options.destination ? pino(opts, options.destination) : pino(opts);
}

function isPino(x: object): x is Logger {
  return pino.symbols.serializersSym in x && typeof (x as { child?: unknown }).child === 'function';
}

/**
 * A pino destination handing each record to `target` as `method(object,
 * message)`: `level`, `time` and `msg` are taken out; trace falls back to
 * debug and fatal to error. A throwing logger never breaks the request that
 * logged.
 */
export function forwardTo(target: StoreAppLogger): DestinationStream {
  return {
    write(line: string) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      const { level, time: _time, msg, ...fields } = record;
      let method = METHOD_OF_LEVEL[level as number] ?? 'info';
      if (method === 'trace' && typeof target.trace !== 'function') method = 'debug';
      if (method === 'fatal' && typeof target.fatal !== 'function') method = 'error';
      const fn = target[method] as ((obj: object, msg?: string) => unknown) | undefined;
      try {
        if (typeof msg === 'string') fn?.call(target, fields, msg);
        else fn?.call(target, fields);
      } catch {
        // The app's logger failed; the kit's work goes on.
      }
    },
  };
}

export { storeLogger } from './store-logger.js';
