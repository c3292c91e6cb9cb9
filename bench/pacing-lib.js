// Closed-loop callers for the pacing bench (shared by the suite and its worker).

/**
 * `callers` loops calling products.list from `startAt` until `endAt` (epoch ms).
 * Calls still waiting at the end are cut off (aborted), not counted as failed.
 * Returns { ok, failed, errors, latencies } with latencies in ms of completed calls.
 */
export async function runCallers(client, { callers, startAt, endAt }) {
  if (startAt > Date.now()) await new Promise((r) => setTimeout(r, startAt - Date.now()));
  let ok = 0;
  let failed = 0;
  const errors = {};
  const latencies = [];
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (Date.now() < endAt) {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), Math.max(1, endAt - Date.now()));
        const t0 = performance.now();
        try {
          await client.products.list({ limit: 1 }, { signal: ac.signal });
          if (Date.now() <= endAt) {
            ok++;
            latencies.push(performance.now() - t0);
          }
        } catch (err) {
          if (err?.code !== 'ABORTED') {
            failed++;
            errors[err?.code ?? 'unknown'] = (errors[err?.code ?? 'unknown'] ?? 0) + 1;
          }
        } finally {
          clearTimeout(timer);
        }
      }
    }),
  );
  return { ok, failed, errors, latencies };
}

export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}
