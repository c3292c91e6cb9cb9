/**
 * OpenTelemetry for the kit, through `@opentelemetry/api` only: every span,
 * counter, name and attribute key the kit emits is declared here. Without a
 * provider registered by the app the API hands out no-op objects, and the
 * helpers below return before building any attribute, so the request paths
 * pay one no-op span each.
 *
 * What never goes into an attribute: tokens, codes, state, secrets, cookies,
 * full URLs or query strings (url.template is the path with ids replaced),
 * error messages (only stable error codes, as `error.type`).
 */
import {
  type Attributes,
  type Counter,
  context,
  type Meter,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/** Instrumentation scope of the kit's tracer and meter. */
export const INSTRUMENTATION_SCOPE = 'store-app-kit';

/** Span names (HTTP client spans are named `{method} {url.template}` per the semantic conventions). */
export const SPAN = {
  installBegin: 'store_app.install.begin',
  installCallback: 'store_app.install.callback',
  refresh: 'store_app.token.refresh',
  webhook: 'store_app.webhook.receive',
  purge: 'store_app.purge',
} as const;

/** Attribute keys: the semantic conventions' where one exists, `store_app.*` otherwise. */
export const ATTR = {
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  resendCount: 'http.request.resend_count',
  urlTemplate: 'url.template',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  storeId: 'store_app.store.id',
  grantType: 'store_app.oauth.grant_type',
  operation: 'store_app.operation',
  outcome: 'store_app.outcome',
  rateLimitWaitMs: 'store_app.rate_limit.wait_ms',
  retryAfterS: 'store_app.rate_limit.retry_after_s',
  webhookTopic: 'store_app.webhook.topic',
  webhookId: 'store_app.webhook.id',
  purgeReason: 'store_app.purge.reason',
} as const;

/** Metric instrument names. */
export const METRIC = {
  refreshes: 'store_app.token.refreshes',
  rateLimited: 'store_app.api.rate_limited',
  purges: 'store_app.purges',
  failures: 'store_app.failures',
} as const;

/** Event names on spans. */
export const EVENT = {
  rateLimited: 'store_app.rate_limited',
} as const;

/** The operation a failure is counted under (`store_app.operation`). */
export type Operation = 'install' | 'token' | 'refresh' | 'api' | 'webhook' | 'purge' | 'request';

// The ProxyTracer follows a provider registered after this import, so the
// tracer is taken once.
const tracer = trace.getTracer(INSTRUMENTATION_SCOPE);

interface Instruments {
  refreshes: Counter;
  rateLimited: Counter;
  purges: Counter;
  failures: Counter;
}

// The metrics API has no proxy: a meter taken before the app registers its
// provider stays a no-op. Counters are therefore rebuilt when the global
// provider changes (they are only touched off the hot paths).
let meterProvider: unknown;
let instruments: Instruments | undefined;

function counters(): Instruments {
  const provider = metrics.getMeterProvider();
  if (instruments === undefined || provider !== meterProvider) {
    const meter: Meter = provider.getMeter(INSTRUMENTATION_SCOPE);
    meterProvider = provider;
    instruments = {
      refreshes: meter.createCounter(METRIC.refreshes, {
        description: 'Access-token refreshes, by outcome',
        unit: '{refresh}',
      }),
      rateLimited: meter.createCounter(METRIC.rateLimited, {
        description: '429 answers from the platform API',
        unit: '{response}',
      }),
      purges: meter.createCounter(METRIC.purges, {
        description: 'Store purges, by outcome',
        unit: '{purge}',
      }),
      failures: meter.createCounter(METRIC.failures, {
        description: 'Failed kit operations, by operation and error.type',
        unit: '{failure}',
      }),
    };
  }
  return instruments;
}

const ERROR_TYPE = /^[A-Za-z0-9_.]{1,64}$/;

/**
 * A low-cardinality `error.type` from an error: its stable code, else the
 * class name; `_OTHER` when neither looks like a code (a platform body could
 * put anything in `code`).
 */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && ERROR_TYPE.test(code)) return code;
  const name = err instanceof Error ? err.name : undefined;
  return name && ERROR_TYPE.test(name) ? name : '_OTHER';
}

/** Counts one failure of `operation` (the `store_app.failures` counter). */
export function countFailure(operation: Operation, type: string): void {
  counters().failures.add(1, { [ATTR.operation]: operation, [ATTR.errorType]: type });
}

/** Counts one refresh attempt by outcome: `refreshed`, `joined`, `lease_lost`, `reauth_required`, `not_installed` or `failed`. */
export function countRefresh(outcome: string): void {
  counters().refreshes.add(1, { [ATTR.outcome]: outcome });
}

/** Counts one 429 from the platform API. */
export function countRateLimited(): void {
  counters().rateLimited.add(1);
}

/** Counts one purge by outcome: `purged`, `skipped` or `failed`. */
export function countPurge(outcome: string): void {
  counters().purges.add(1, { [ATTR.outcome]: outcome });
}

/** Marks `span` failed with a stable code (no message: messages may quote the platform). */
export function failSpan(span: Span, type: string): void {
  span.setAttribute(ATTR.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** `error.type` recorded on handler spans, read when the response ends. */
const handlerErrors = new WeakMap<Span, string>();

/**
 * A kit handler answered with an error (`type` is the stable code it sent):
 * counts a failure of `operation` and names the code on the active span.
 */
export function recordError(operation: Operation, type: string): void {
  countFailure(operation, type);
  const span = trace.getActiveSpan();
  if (span?.isRecording()) {
    span.setAttribute(ATTR.errorType, type);
    handlerErrors.set(span, type);
  }
}

/** Sets attributes on the active span when one is recording (built lazily). */
export function annotateActive(build: () => Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(build());
}

export interface SpanSpec {
  kind?: SpanKind;
  /** Counted under `store_app.failures` when `fn` throws. */
  operation?: Operation;
  /** Built only when the span records. */
  attributes?: () => Attributes;
  /** The span's real name, built only when it records (it starts as `name`). */
  rename?: () => string;
}

/**
 * Runs `fn` inside a span that is the active one for everything `fn` awaits
 * (children nest under it when the app registered a context manager, as the
 * Node SDK does). A throw marks the span failed with the error's code and
 * counts a failure; the error itself is rethrown untouched and never
 * recorded (its message could quote a platform body).
 */
export function inSpan<T>(
  name: string,
  spec: SpanSpec,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, { kind: spec.kind ?? SpanKind.INTERNAL });
  if (!span.isRecording()) {
    // No provider (or sampled out): no context switch, no extra async frame.
    const operation = spec.operation;
    const run = fn(span);
    return operation === undefined
      ? run
      : run.catch((err: unknown) => {
          countFailure(operation, errorType(err));
          throw err;
        });
  }
  return inRecordingSpan(span, spec, fn);
}

async function inRecordingSpan<T>(
  span: Span,
  spec: SpanSpec,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (spec.rename) span.updateName(spec.rename());
  if (spec.attributes) span.setAttributes(spec.attributes());
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
  } catch (err) {
    const type = errorType(err);
    failSpan(span, type);
    if (spec.operation) countFailure(spec.operation, type);
    throw err;
  } finally {
    span.end();
  }
}

/** What `traceHandler` reads of an answer: its status, and when it is done with. */
interface TracedAnswer {
  status: number;
  /** Chained: the span ends when the answer is finished or its connection closed. */
  onClose?: () => void;
}

/**
 * Runs a kit route's handler inside a span that ends when its answer is finished (or
 * the connection closed). A status of 400 or more marks it failed, with the
 * `error.type` the handler recorded (`recordError`) or the status. Failures are
 * counted by `recordError`, so without a provider this adds nothing per request but
 * one no-op span. The core route wrapper calls it, so both shells emit the same spans.
 */
export function traceHandler<R extends TracedAnswer>(
  name: string,
  method: string,
  fn: () => Promise<R>,
): Promise<R> {
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL });
  if (!span.isRecording()) return fn();
  span.setAttribute(ATTR.httpMethod, method);
  const run = context.with(trace.setSpan(context.active(), span), fn);
  return run.then(
    (r) => {
      span.setAttribute(ATTR.httpStatus, r.status);
      if (r.status >= 400) failSpan(span, handlerErrors.get(span) ?? String(r.status));
      const previous = r.onClose;
      r.onClose = () => {
        previous?.();
        span.end();
      };
      return r;
    },
    (err: unknown) => {
      failSpan(span, errorType(err));
      span.end();
      throw err;
    },
  );
}

export { SpanKind };

const SEGMENT = /^[a-z]+(?:-[a-z]+)*$/;

/**
 * The low-cardinality `url.template` of an API path: segments that are not
 * plain lowercase words (ids, numbers, encoded values) become `{id}`.
 * `/products/9f1c…/variants` → `/products/{id}/variants`.
 */
export function urlTemplate(path: string): string {
  const q = path.indexOf('?');
  const clean = q < 0 ? path : path.slice(0, q);
  return clean
    .split('/')
    .map((s, i) => (i === 0 || s === '' || SEGMENT.test(s) ? s : '{id}'))
    .join('/');
}

/** `server.address` and `server.port` of a URL (never its path, query or credentials). */
export function serverAttributes(url: string | URL): Attributes {
  try {
    const u = typeof url === 'string' ? new URL(url) : url;
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { [ATTR.serverAddress]: u.hostname, [ATTR.serverPort]: port };
  } catch {
    return {};
  }
}
