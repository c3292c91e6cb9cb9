/**
 * Timers on every runtime: Node's `unref()` where timers have it (a waiting
 * retry never keeps the process alive), nothing on Workers, whose timers are
 * numbers; and a promise of a delay without `node:timers/promises`.
 */

/** Lets the process exit while `timer` waits (Node, Bun, Deno); a no-op elsewhere. */
export function unref(timer: unknown): void {
  (timer as { unref?: () => void } | null)?.unref?.();
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
