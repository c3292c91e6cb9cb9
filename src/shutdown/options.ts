/**
 * `storeApp({ shutdown })`: how `kit.shutdown()` and `kit.shutdownOnSignals()`
 * stop an instance (docs/operations.md). The same schema validates the
 * per-call options of both.
 */
import * as v from 'valibot';
import { integer } from '../options/index.js';

export const SHUTDOWN_DEFAULTS = {
  /**
   * 8 s: under Kubernetes' default terminationGracePeriodSeconds (30 s) with
   * room for a preStop sleep, and past the platform's 5 s webhook ack deadline.
   */
  deadlineMs: 8_000,
  keepListeningMs: 0,
} as const;

const shutdownEntries = {
  /**
   * From the signal to the end of `kit.shutdown()`, in ms: requests accepted
   * before it finish within this, then the kit closes; what is still running
   * then is cut (and logged). Keep it under your orchestrator's grace period
   * (Kubernetes: `terminationGracePeriodSeconds` minus the preStop hook).
   * @default 8000
   */
  deadlineMs: v.optional(integer(1_000, 600_000), SHUTDOWN_DEFAULTS.deadlineMs),
  /**
   * How long the server keeps accepting new connections after health turned
   * 503 "draining", in ms, for a load balancer that keeps sending until its
   * next health probe fails. 0 (the default) stops accepting at once: right
   * behind Kubernetes with a preStop sleep, which already waited. Part of `deadlineMs`.
   * @default 0
   */
  keepListeningMs: v.optional(integer(0, 600_000), SHUTDOWN_DEFAULTS.keepListeningMs),
};

/** Past the listening time, the kit needs a moment to finish requests and close. */
export const shutdownOptionsSchema = v.pipe(
  v.strictObject(shutdownEntries),
  v.forward(
    v.check(
      (o) => o.keepListeningMs <= o.deadlineMs - 1_000,
      'must end at least 1000 ms before shutdown.deadlineMs: lower it, or raise the deadline.',
    ),
    ['keepListeningMs'],
  ),
);

export type ShutdownOptions = v.InferInput<typeof shutdownOptionsSchema>;

export interface ResolvedShutdownOptions {
  deadlineMs: number;
  keepListeningMs: number;
}
