/**
 * The record gate on its own: arrival order, the wait bound, and slots given
 * back whatever the record's outcome (a failed record must not shrink the
 * gate, or a database outage would leave it closed after recovery).
 */
import { describe, expect, it } from 'vitest';
import { isStorageFailure, StorageError } from '../../src/errors/index.js';
import { createRecordGate, recordGateFor } from '../../src/webhooks/record-gate.js';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('record gate', () => {
  it('admits waiting records in arrival order, one per freed slot', async () => {
    const gate = createRecordGate({ concurrency: 2, maxWaitMs: 60_000 });
    const holds = [deferred(), deferred()];
    const order: number[] = [];
    const first = holds.map((h, i) =>
      gate.run(async () => {
        order.push(i);
        await h.promise;
      }),
    );
    const later = [2, 3, 4].map((i) => gate.run(async () => void order.push(i)));
    expect(gate.load).toEqual({ running: 2, waiting: 3 });
    holds[1]!.resolve();
    holds[0]!.resolve();
    await Promise.all([...first, ...later]);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a record that waited past the bound fails as a storage timeout (503) without running', async () => {
    const gate = createRecordGate({ concurrency: 1, maxWaitMs: 20 });
    const hold = deferred();
    const running = gate.run(() => hold.promise);
    let ran = false;
    const err = await gate
      .run(async () => {
        ran = true;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).reason).toBe('timeout');
    expect(isStorageFailure(err)).toBe(true);
    expect(ran).toBe(false);
    expect(gate.load).toEqual({ running: 1, waiting: 0 });
    hold.resolve();
    await running;
  });

  it('with no room to wait (ackTimeoutMs not above storage.timeoutMs) a full gate refuses at once', async () => {
    const gate = recordGateFor({
      poolMax: 1,
      storageTimeoutMs: 2000,
      ackTimeoutMs: 2000,
    });
    const hold = deferred();
    const running = gate.run(() => hold.promise);
    await expect(gate.run(async () => 'never')).rejects.toBeInstanceOf(StorageError);
    hold.resolve();
    await running;
    expect(await gate.run(async () => 'after')).toBe('after');
  });

  it('a failed record gives its slot back: the next one runs', async () => {
    const gate = createRecordGate({ concurrency: 1, maxWaitMs: 60_000 });
    const hold = deferred();
    const failing = gate.run(() => hold.promise);
    const next = gate.run(async () => 'recorded');
    hold.reject(new StorageError('down', { reason: 'timeout' }));
    await expect(failing).rejects.toBeInstanceOf(StorageError);
    expect(await next).toBe('recorded');
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a bounded record not settled within the budget fails as a storage timeout, before the 202; its slot is held until it settles', async () => {
    const gate = createRecordGate({ concurrency: 1, maxWaitMs: 60_000, budgetMs: 20 });
    const hold = deferred();
    const err = await gate.run(() => hold.promise, true).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).reason).toBe('timeout');
    expect(gate.load.running).toBe(1);
    hold.resolve();
    expect(await gate.run(async () => 'next', true)).toBe('next');
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });
});
