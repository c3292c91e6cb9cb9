/**
 * `storeApp({ health })`: the opt-in health endpoint. Absent (the default),
 * no route is mounted; `kit.health()` still answers for an app that mounts
 * its own, behind its own guard.
 */
import * as v from 'valibot';
import { integer, urlPath } from '../options/index.js';

export const healthOptionsSchema = v.strictObject({
  /**
   * Path of the `GET` route `kit.middleware()` mounts. It is not behind any
   * authentication: it tells whoever asks whether the database answers, how
   * many purges are pending and when a refresh last failed (never a store id,
   * token, URL or error message).
   * @default '/healthz'
   */
  path: v.optional(urlPath(), '/healthz'),
  /**
   * How long the database check may take before it counts as unreachable, in ms.
   * @default 1000
   */
  dbTimeoutMs: v.optional(integer(10, 30_000), 1000),
  /**
   * How long one report is reused, in ms: a flood of probes costs one
   * database query per period. 0 checks on every request (still one at a time).
   * @default 1000
   */
  cacheMs: v.optional(integer(0, 60_000), 1000),
});

export type HealthOptions = v.InferInput<typeof healthOptionsSchema>;

export interface ResolvedHealthOptions {
  /** null: no route mounted. */
  path: string | null;
  dbTimeoutMs: number;
  cacheMs: number;
}

/** Defaults when `health` is not given: no route, the same check for `kit.health()`. */
export const HEALTH_DEFAULTS: ResolvedHealthOptions = {
  path: null,
  dbTimeoutMs: 1000,
  cacheMs: 1000,
};
