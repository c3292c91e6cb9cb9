/**
 * An in-memory OpenTelemetry setup registered as the global providers, as an
 * app's SDK set-up would (with the async-hooks context manager the Node SDK
 * registers), for asserting the kit's spans and counters.
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface Otel {
  spans(): ReadableSpan[];
  /** Every data point of a counter (cumulative), with its attributes. */
  counter(name: string): Promise<Array<{ attributes: Record<string, unknown>; value: number }>>;
  reset(): void;
  shutdown(): Promise<void>;
}

export function registerOtel(): Otel {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spanExporter)],
  });
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans: () => spanExporter.getFinishedSpans(),
    async counter(name) {
      metricExporter.reset();
      await reader.forceFlush();
      const last = metricExporter.getMetrics().at(-1);
      const found = last?.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === name);
      return (found?.dataPoints ?? []).map((p) => ({
        attributes: { ...p.attributes },
        value: (p as DataPoint<number>).value,
      }));
    },
    reset() {
      spanExporter.reset();
    },
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

/** Sum of a counter's points whose attributes include `match`. */
export function total(
  points: Array<{ attributes: Record<string, unknown>; value: number }>,
  match: Record<string, unknown> = {},
): number {
  return points
    .filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v))
    .reduce((n, p) => n + p.value, 0);
}
