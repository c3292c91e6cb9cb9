/**
 * Coalesces refreshed-token writes that arrive together into one statement
 * (`RefreshLeaseAdapter.completeMany`): a sweep of 100,000 due tokens paid one
 * round trip per store for them. A write waits at most one timer turn for
 * company (it is a grant: the caller keeps it in memory if the write fails,
 * ../refresh/pending-writes.ts), and a batch is sent once `MAX_BATCH` wait.
 * Batches run side by side; each member settles with its own row.
 */
import type { SealedTokens } from './contract.js';

/** Most writes in one statement (7 parameters each: well under Postgres' 65,535). */
export const MAX_BATCH = 100;

export interface CompleteItem {
  storeId: string;
  owner: string;
  tokens: SealedTokens;
}

interface Waiting<R> {
  item: CompleteItem;
  resolve(row: R | null): void;
  reject(err: unknown): void;
}

export interface CompleteBatch<R> {
  /** Queues one write; settles with its row (null: the lease was lost) once its batch ran. */
  add(item: CompleteItem): Promise<R | null>;
}

export function createCompleteBatch<R>(
  write: (items: CompleteItem[]) => Promise<Array<R | null>>,
): CompleteBatch<R> {
  let queue: Waiting<R>[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  function send(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    write(batch.map((w) => w.item)).then(
      (rows) => {
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(rows[i] ?? null);
      },
      // All or nothing: every member failed, and each keeps its pair (pending writes).
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }

  return {
    add(item) {
      return new Promise<R | null>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (queue.length >= MAX_BATCH) send();
        else timer ??= setTimeout(send, 0);
      });
    },
  };
}
