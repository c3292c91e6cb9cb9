/**
 * The storage conformance suite: what every StorageAdapter must do, as vitest
 * tests an adapter author runs in their own project with one call. The kit
 * runs the same suite on its built-in SQLite, Postgres and MySQL storage and on an
 * in-memory reference adapter.
 *
 * The suite only uses the public interface. Time is the suite's own: every
 * `now` it passes is a value it picked, so expiry is tested by jumping the
 * clock, never by sleeping. Ids are unique per run, so the database need not
 * be empty; nothing is cleaned up (use a throwaway database).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SealedTokens, StorageAdapter } from '../storage/contract.js';

export interface StorageAdapterSuiteOptions<Tx> {
  /** Shown as the outer `describe`. */
  name: string;
  /**
   * Opens a new adapter instance on the suite's one database. Called several
   * times: instances open at the same time stand in for several processes
   * (the concurrency cases race them against each other). The suite calls
   * `migrate()` on the first and `close()` on each.
   */
  open(): Promise<StorageAdapter<Tx>>;
  /**
   * Optional, recommended: a way to write through the transaction handle your
   * adapter hands to effects, and to count what committed, so the suite can
   * check that effects commit and roll back with the webhook id and purge.
   */
  txProbe?: {
    write(tx: Tx, key: string): Promise<void>;
    count(key: string): Promise<number>;
  };
  /**
   * How many concurrent callers race in the concurrency cases.
   * @default 12
   */
  contenders?: number;
}

const run = randomUUID().slice(0, 8);
let counter = 0;
const unique = (label: string) => `${label}-${run}-${++counter}`;

/** A fixed, ms-precise clock base, far from the real time (nothing may read the real clock). */
const T0 = Date.UTC(2031, 0, 1, 12, 0, 0, 0);
const at = (offsetMs: number) => new Date(T0 + offsetMs);

function sealed(label: string, overrides: Partial<SealedTokens> = {}): SealedTokens {
  // Looks like a compact JWE; the adapter must treat it as opaque text.
  const part = () => randomUUID().replaceAll('-', '');
  return {
    scopes: ['read_products', 'write_orders'],
    accessTokenEnc: `eyJhbGciOiJkaXIi.${label}.${part()}.${part()}.${part()}`,
    refreshTokenEnc: `eyJhbGciOiJkaXIi.r${label}.${part()}.${part()}.${part()}`,
    keyId: 'kid-1',
    accessTokenExpiresAt: at(3_600_000),
    ...overrides,
  };
}

/** Resolves every promise and reports which fulfilled with true (errors fail the test). */
async function winners(calls: Array<Promise<boolean>>): Promise<number> {
  return (await Promise.all(calls)).filter((won) => won).length;
}

/**
 * Defines the conformance suite for one adapter. Call it at the top level of a
 * vitest test file:
 *
 * @example
 * import { defineStorageAdapterSuite } from 'store-app-kit/testing';
 * defineStorageAdapterSuite({ name: 'my adapter', open: () => openMyAdapter(url) });
 */
export function defineStorageAdapterSuite<Tx>(options: StorageAdapterSuiteOptions<Tx>): void {
  const contenders = options.contenders ?? 12;

  describe(`StorageAdapter conformance: ${options.name}`, () => {
    let a: StorageAdapter<Tx>;
    /** A second instance on the same database: "another process". */
    let b: StorageAdapter<Tx>;

    beforeAll(async () => {
      a = await options.open();
      await a.migrate();
      b = await options.open();
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    const pick = (i: number) => (i % 2 === 0 ? a : b);

    describe('installations', () => {
      it('save inserts at version 1 and get/list return the ciphertext byte for byte', async () => {
        const storeId = unique('inst');
        const tokens = sealed('crud', { refreshTokenEnc: null });
        const saved = await a.installations.save(storeId, tokens, {
          platformInstalledAt: at(-5000),
          now: at(0),
        });
        const expected = {
          storeId,
          ...tokens,
          installedAt: at(0),
          updatedAt: at(0),
          version: 1,
          needsReauth: false,
          platformInstalledAt: at(-5000),
        };
        expect(saved).toEqual(expected);
        expect(await b.installations.get(storeId)).toEqual(expected);
        expect(await a.installations.get(unique('missing'))).toBeNull();
        const listed = await a.installations.list();
        expect(listed.find((i) => i.storeId === storeId)).toEqual(expected);
      });

      it('a reinstall replaces in place, bumps version, clears needsReauth and the lease', async () => {
        const storeId = unique('reinstall');
        const first = await a.installations.save(storeId, sealed('one'), {
          platformInstalledAt: null,
          now: at(0),
        });
        await a.installations.markNeedsReauth(storeId);
        expect(await a.refreshLease.acquire(storeId, 1, 'holder', at(60_000), at(0))).toBe(true);
        const next = sealed('two', { scopes: ['read_products'] });
        const second = await b.installations.save(storeId, next, {
          platformInstalledAt: at(500),
          now: at(1000),
        });
        expect(second).toEqual({
          storeId,
          ...next,
          installedAt: at(1000),
          updatedAt: at(1000),
          version: first.version + 1,
          needsReauth: false,
          platformInstalledAt: at(500),
        });
        // The old holder's lease is gone: another owner takes it at the new version.
        expect(
          await a.refreshLease.acquire(storeId, second.version, 'other', at(60_000), at(1000)),
        ).toBe(true);
        expect((await a.installations.list()).filter((i) => i.storeId === storeId)).toHaveLength(1);
      });

      it('markNeedsReauth flags (keeping tokens), and with a version spares a row that moved on', async () => {
        const storeId = unique('reauth');
        const old = await a.installations.save(storeId, sealed('old'), {
          platformInstalledAt: null,
          now: at(0),
        });
        const moved = await a.installations.save(storeId, sealed('new'), {
          platformInstalledAt: null,
          now: at(1),
        });
        expect(await a.installations.markNeedsReauth(storeId, old.version)).toBe(false);
        expect((await a.installations.get(storeId))?.needsReauth).toBe(false);
        expect(await b.installations.markNeedsReauth(storeId, moved.version)).toBe(true);
        const flagged = await a.installations.get(storeId);
        expect(flagged).toMatchObject({
          needsReauth: true,
          version: moved.version,
          accessTokenEnc: moved.accessTokenEnc,
        });
        expect(await a.installations.markNeedsReauth(unique('none'))).toBe(false);
      });

      it('listExpiringBefore: soonest first, skips flagged rows, honours the limit', async () => {
        const base = 40 * 365 * 86_400_000; // beyond every other row of the suite
        const ids = [unique('exp1'), unique('exp2'), unique('exp3')];
        const expiries = [base + 3000, base + 1000, base + 2000];
        for (const [i, id] of ids.entries()) {
          await a.installations.save(
            id,
            sealed(`e${i}`, { accessTokenExpiresAt: at(expiries[i]!) }),
            {
              platformInstalledAt: null,
              now: at(0),
            },
          );
        }
        await a.installations.markNeedsReauth(ids[2]!);
        const all = await a.installations.listExpiringBefore(at(base + 5000), 100_000);
        expect(all.filter((id) => ids.includes(id))).toEqual([ids[1], ids[0]]);
        const early = await a.installations.listExpiringBefore(at(base + 1500), 100_000);
        expect(early).toContain(ids[1]);
        expect(early).not.toContain(ids[0]);
        expect(await a.installations.listExpiringBefore(at(base + 5000), 1)).toHaveLength(1);
      });
    });

    describe('refresh lease', () => {
      it('two processes race for one lease: exactly one wins', async () => {
        const storeId = unique('race');
        const inst = await a.installations.save(storeId, sealed('r'), {
          platformInstalledAt: null,
          now: at(0),
        });
        const won = await winners(
          Array.from({ length: contenders }, (_, i) =>
            pick(i).refreshLease.acquire(storeId, inst.version, `owner-${i}`, at(60_000), at(0)),
          ),
        );
        expect(won).toBe(1);
      });

      it('refuses a moved version and a missing row', async () => {
        const storeId = unique('moved');
        const inst = await a.installations.save(storeId, sealed('m'), {
          platformInstalledAt: null,
          now: at(0),
        });
        expect(
          await a.refreshLease.acquire(storeId, inst.version + 1, 'x', at(60_000), at(0)),
        ).toBe(false);
        expect(await a.refreshLease.acquire(unique('none'), 1, 'x', at(60_000), at(0))).toBe(false);
      });

      it('an unexpired lease blocks others, its owner may renew, an expired one is free', async () => {
        const storeId = unique('expiry');
        const inst = await a.installations.save(storeId, sealed('e'), {
          platformInstalledAt: null,
          now: at(0),
        });
        const v = inst.version;
        expect(await a.refreshLease.acquire(storeId, v, 'first', at(10_000), at(0))).toBe(true);
        expect(await b.refreshLease.acquire(storeId, v, 'second', at(20_000), at(9_999))).toBe(
          false,
        );
        expect(await a.refreshLease.acquire(storeId, v, 'first', at(20_000), at(9_999))).toBe(true);
        // The clock jumps past the renewed lease: one of two late comers gets it.
        const won = await winners([
          a.refreshLease.acquire(storeId, v, 'late-a', at(90_000), at(20_000)),
          b.refreshLease.acquire(storeId, v, 'late-b', at(90_000), at(20_000)),
        ]);
        expect(won).toBe(1);
      });

      it('complete commits for the holder only: bumps version, clears the lease', async () => {
        const storeId = unique('complete');
        const inst = await a.installations.save(storeId, sealed('c'), {
          platformInstalledAt: null,
          now: at(0),
        });
        expect(
          await a.refreshLease.acquire(storeId, inst.version, 'holder', at(60_000), at(0)),
        ).toBe(true);
        expect(await b.refreshLease.complete(storeId, 'thief', sealed('lost'), at(1))).toBeNull();
        expect((await a.installations.get(storeId))?.accessTokenEnc).toBe(inst.accessTokenEnc);
        const fresh = sealed('won', { accessTokenExpiresAt: at(7_200_000), scopes: ['a', 'b'] });
        const done = await a.refreshLease.complete(storeId, 'holder', fresh, at(2000));
        expect(done).toEqual({
          ...inst,
          ...fresh,
          updatedAt: at(2000),
          version: inst.version + 1,
        });
        expect(await a.installations.get(storeId)).toEqual(done);
        // Completed once: the lease is cleared, so a second complete gets null.
        expect(await a.refreshLease.complete(storeId, 'holder', sealed('again'), at(3))).toBeNull();
        expect(await b.refreshLease.acquire(storeId, inst.version, 'c', at(60_000), at(3))).toBe(
          false,
        );
        expect(await b.refreshLease.acquire(storeId, done!.version, 'c', at(60_000), at(3))).toBe(
          true,
        );
      });

      it('release frees the lease for its holder only, without touching tokens', async () => {
        const storeId = unique('release');
        const inst = await a.installations.save(storeId, sealed('l'), {
          platformInstalledAt: null,
          now: at(0),
        });
        await a.refreshLease.acquire(storeId, inst.version, 'holder', at(60_000), at(0));
        await b.refreshLease.release(storeId, 'someone-else');
        expect(await b.refreshLease.acquire(storeId, inst.version, 'b', at(60_000), at(1))).toBe(
          false,
        );
        await a.refreshLease.release(storeId, 'holder');
        expect(await b.refreshLease.acquire(storeId, inst.version, 'b', at(60_000), at(1))).toBe(
          true,
        );
        expect(await a.installations.get(storeId)).toEqual(inst);
      });
    });

    describe('claimOnce', () => {
      it('two processes claim one id: exactly one wins, and a replay never does', async () => {
        const id = unique('state');
        const won = await winners(
          Array.from({ length: contenders }, (_, i) =>
            pick(i).claimOnce('oauth-state', id, at(600_000), at(0)),
          ),
        );
        expect(won).toBe(1);
        // Replays, sequential and from either process, still before expiry.
        for (const adapter of [a, b, a]) {
          expect(await adapter.claimOnce('oauth-state', id, at(600_000), at(599_999))).toBe(false);
        }
      });

      it('namespaces are separate', async () => {
        const id = unique('ns');
        expect(await a.claimOnce('launch-jti', id, at(60_000), at(0))).toBe(true);
        expect(await b.claimOnce('auth-code', id, at(60_000), at(0))).toBe(true);
        expect(await b.claimOnce('launch-jti', id, at(60_000), at(0))).toBe(false);
      });

      it('an expired claim is taken again by exactly one caller', async () => {
        const id = unique('expired');
        expect(await a.claimOnce('launch-jti', id, at(1000), at(0))).toBe(true);
        expect(await b.claimOnce('launch-jti', id, at(5000), at(999))).toBe(false);
        const won = await winners(
          Array.from({ length: contenders }, (_, i) =>
            pick(i).claimOnce('launch-jti', id, at(5000), at(1000)),
          ),
        );
        expect(won).toBe(1);
        expect(await a.claimOnce('launch-jti', id, at(9000), at(4999))).toBe(false);
      });

      it('takes ids of 256 characters', async () => {
        const id = `${unique('long')}-`.padEnd(256, 'x');
        expect(await a.claimOnce('n'.repeat(256), id, at(1000), at(0))).toBe(true);
        expect(await b.claimOnce('n'.repeat(256), id, at(1000), at(0))).toBe(false);
      });
    });

    describe('webhook dedupe', () => {
      const delivery = (webhookId: string, receivedAt = at(0)) => ({
        webhookId,
        topic: 'orders/create',
        receivedAt,
      });

      it('runs effects once and reports the duplicate without calling them', async () => {
        const id = unique('msg');
        let runs = 0;
        expect(await a.webhooks.runOnce(delivery(id), async () => ++runs)).toEqual({
          duplicate: false,
          result: 1,
        });
        expect(await b.webhooks.runOnce(delivery(id), async () => ++runs)).toEqual({
          duplicate: true,
        });
        expect(runs).toBe(1);
      });

      it('two processes receive one id in parallel: effects run once', async () => {
        const id = unique('parallel');
        let runs = 0;
        const results = await Promise.all(
          Array.from({ length: contenders }, (_, i) =>
            pick(i).webhooks.runOnce(delivery(id), async () => {
              runs++;
              await new Promise((r) => setTimeout(r, 5));
              return i;
            }),
          ),
        );
        expect(runs).toBe(1);
        expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      });

      it('effects that throw: the error comes back unchanged, the id is not recorded, a retry runs', async () => {
        const id = unique('fail');
        const eventId = unique('evt');
        const failure = new Error('handler failed');
        await expect(
          a.webhooks.runOnce(delivery(id), async (scope) => {
            await scope.addPendingPurge({ eventId, storeId: 's', eventAt: at(0) });
            if (options.txProbe) await options.txProbe.write(scope.tx, id);
            throw failure;
          }),
        ).rejects.toBe(failure);
        const due = await a.purgeOutbox.due(at(10 * 365 * 86_400_000), 100_000);
        expect(due.map((p) => p.eventId)).not.toContain(eventId);
        if (options.txProbe) expect(await options.txProbe.count(id)).toBe(0);
        expect(await b.webhooks.runOnce(delivery(id), async () => 'retried')).toEqual({
          duplicate: false,
          result: 'retried',
        });
      });

      it('a pending purge added in the scope commits with the delivery', async () => {
        const id = unique('uninstall');
        const storeId = unique('store');
        await a.webhooks.runOnce(delivery(id, at(100)), async (scope) => {
          await scope.addPendingPurge({ eventId: id, storeId, eventAt: at(50) });
          if (options.txProbe) await options.txProbe.write(scope.tx, id);
        });
        const due = await b.purgeOutbox.due(at(100), 100_000);
        expect(due.find((p) => p.eventId === id)).toEqual({
          eventId: id,
          storeId,
          eventAt: at(50),
          createdAt: at(100),
          attempts: 0,
          nextAttemptAt: at(100),
          lastError: null,
          kind: 'purge',
        });
        if (options.txProbe) expect(await options.txProbe.count(id)).toBe(1);
        await a.purgeOutbox.complete(id);
      });

      it('prune forgets ids received before the cut-off, keeps the others', async () => {
        const old = unique('old');
        const recent = unique('recent');
        await a.webhooks.runOnce(delivery(old, at(-20 * 86_400_000)), async () => 1);
        await a.webhooks.runOnce(delivery(recent, at(0)), async () => 1);
        expect(await b.webhooks.prune(at(-86_400_000))).toBeGreaterThanOrEqual(1);
        expect(await a.webhooks.runOnce(delivery(old), async () => 2)).toEqual({
          duplicate: false,
          result: 2,
        });
        expect(await a.webhooks.runOnce(delivery(recent), async () => 2)).toEqual({
          duplicate: true,
        });
      });
    });

    describe('purge outbox', () => {
      it('adds once per event, lists due entries earliest first, records failures, completes', async () => {
        const base = 50 * 365 * 86_400_000; // later than every other entry of the suite
        const e1 = unique('evt');
        const e2 = unique('evt');
        const entry = (eventId: string) => ({ eventId, storeId: unique('s'), eventAt: at(base) });
        const first = entry(e1);
        await a.purgeOutbox.add(first, at(base + 10));
        await b.purgeOutbox.add({ ...first, storeId: 'changed' }, at(base + 99)); // no-op
        await a.purgeOutbox.add(entry(e2), at(base + 20));
        const mine = async (now: Date) =>
          (await a.purgeOutbox.due(now, 100_000)).filter(
            (p) => p.eventId === e1 || p.eventId === e2,
          );
        expect(await mine(at(base + 9))).toEqual([]);
        expect((await mine(at(base + 20))).map((p) => p.eventId)).toEqual([e1, e2]);
        expect((await mine(at(base + 20)))[0]).toEqual({
          ...first,
          createdAt: at(base + 10),
          attempts: 0,
          nextAttemptAt: at(base + 10),
          lastError: null,
          kind: 'purge',
        });
        await b.purgeOutbox.recordFailure(e1, at(base + 60_000), 'STORAGE_UNAVAILABLE');
        expect((await mine(at(base + 59_999))).map((p) => p.eventId)).toEqual([e2]);
        const retried = (await mine(at(base + 60_000))).find((p) => p.eventId === e1);
        expect(retried).toMatchObject({
          attempts: 1,
          nextAttemptAt: at(base + 60_000),
          lastError: 'STORAGE_UNAVAILABLE',
        });
        await a.purgeOutbox.complete(e1);
        await b.purgeOutbox.complete(e2);
        expect(await mine(at(base + 10 ** 9))).toEqual([]);
      });

      it('get returns one entry or null; complete with sweepAt keeps it as a sweep due then', async () => {
        const base = 51 * 365 * 86_400_000;
        const eventId = unique('evt');
        const entry = { eventId, storeId: unique('s'), eventAt: at(base) };
        expect(await b.purgeOutbox.get(eventId)).toBeNull();
        await a.purgeOutbox.add(entry, at(base + 10));
        expect(await b.purgeOutbox.get(eventId)).toMatchObject({ ...entry, kind: 'purge' });
        await a.purgeOutbox.recordFailure(eventId, at(base + 20), 'STORAGE_UNAVAILABLE');
        await b.purgeOutbox.complete(eventId, at(base + 60_000));
        expect(await a.purgeOutbox.get(eventId)).toEqual({
          ...entry,
          createdAt: at(base + 10),
          attempts: 0,
          nextAttemptAt: at(base + 60_000),
          lastError: null,
          kind: 'sweep',
        });
        // Leasing by event id never takes a sweep (a redelivery must not run it early).
        expect(
          await b.purgeOutbox.lease(at(base + 30), {
            owner: unique('o'),
            until: at(base + 90),
            limit: 1,
            eventId,
          }),
        ).toEqual([]);
        // A second add of the event (a redelivery) does not turn the sweep back into a purge.
        await a.purgeOutbox.add(entry, at(base + 30));
        expect((await a.purgeOutbox.get(eventId))?.kind).toBe('sweep');
        await a.purgeOutbox.complete(eventId);
        expect(await b.purgeOutbox.get(eventId)).toBeNull();
      });

      it('lease: each due entry goes to exactly one of racing callers until the lease ends', async () => {
        const base = 52 * 365 * 86_400_000;
        const ids = Array.from({ length: 5 }, () => unique('lease'));
        for (const [i, eventId] of ids.entries()) {
          await a.purgeOutbox.add(
            { eventId, storeId: unique('s'), eventAt: at(base) },
            at(base + i),
          );
        }
        const now = at(base + 100);
        const mine = (list: Array<{ eventId: string }>) =>
          list.map((p) => p.eventId).filter((id) => ids.includes(id));
        // Not due yet: nothing to lease.
        expect(
          mine(
            await a.purgeOutbox.lease(at(base - 1), {
              owner: unique('o'),
              until: now,
              limit: 10 ** 6,
            }),
          ),
        ).toEqual([]);
        const adapters = [a, b];
        const taken = await Promise.all(
          Array.from({ length: contenders }, (_, i) =>
            adapters[i % 2]!.purgeOutbox.lease(now, {
              owner: unique('owner'),
              until: at(base + 60_000),
              limit: 10 ** 6,
            }),
          ),
        );
        const all = taken.flatMap(mine);
        expect(all.sort()).toEqual([...ids].sort());
        // Leased: nobody gets them again before the lease ends, even by event id.
        expect(
          mine(
            await b.purgeOutbox.lease(at(base + 59_999), {
              owner: unique('o'),
              until: at(base + 70_000),
              limit: 10 ** 6,
            }),
          ),
        ).toEqual([]);
        expect(
          await a.purgeOutbox.lease(at(base + 59_999), {
            owner: unique('o'),
            until: at(base + 70_000),
            limit: 1,
            eventId: ids[0]!,
          }),
        ).toEqual([]);
        // A failure frees the lease; by event id the entry is leased before its next attempt is due.
        await a.purgeOutbox.recordFailure(ids[1]!, at(base + 200), 'X');
        const renewer = unique('renewer');
        const again = await b.purgeOutbox.lease(at(base + 150), {
          owner: renewer,
          until: at(base + 30_000),
          limit: 1,
          eventId: ids[1]!,
        });
        expect(again.map((p) => p.eventId)).toEqual([ids[1]]);
        expect(again[0]).toMatchObject({ attempts: 1, lastError: 'X', kind: 'purge' });
        // Its owner renews it; nobody else takes it meanwhile.
        const renewed = await b.purgeOutbox.lease(at(base + 29_000), {
          owner: renewer,
          until: at(base + 40_000),
          limit: 1,
          eventId: ids[1]!,
        });
        expect(renewed.map((p) => p.eventId)).toEqual([ids[1]]);
        expect(
          await a.purgeOutbox.lease(at(base + 35_000), {
            owner: unique('o'),
            until: at(base + 50_000),
            limit: 1,
            eventId: ids[1]!,
          }),
        ).toEqual([]);
        // Once the leases ended (their owners crashed), the entries are leased again, earliest due first.
        const after = await a.purgeOutbox.lease(at(base + 60_000), {
          owner: unique('o'),
          until: at(base + 120_000),
          limit: 10 ** 6,
        });
        expect(mine(after)).toEqual([...ids.filter((id) => id !== ids[1]), ids[1]]);
        for (const id of ids) await a.purgeOutbox.complete(id);
      });
    });

    describe('sessions', () => {
      const record = (storeId: string | null, expiresAt: Date) => ({
        storeId,
        data: {
          cookie: { originalMaxAge: 60_000, path: '/' },
          storeId,
          nested: { n: 1, ok: true },
        },
        expiresAt,
      });

      it('set, get from another process, touch, destroy', async () => {
        const sid = unique('sid');
        const rec = record('store-1', at(60_000));
        await a.sessions.set(sid, rec);
        expect(await b.sessions.get(sid, at(0))).toEqual(rec);
        const touched = { ...rec, data: { ...rec.data, seen: 2 }, expiresAt: at(120_000) };
        await b.sessions.touch(sid, touched);
        expect(await a.sessions.get(sid, at(100_000))).toEqual(touched);
        const replaced = record(null, at(30_000));
        await a.sessions.set(sid, replaced);
        expect(await a.sessions.get(sid, at(0))).toEqual(replaced);
        await b.sessions.destroy(sid);
        expect(await a.sessions.get(sid, at(0))).toBeNull();
        await a.sessions.destroy(sid); // destroying a missing session is fine
      });

      it('touch never creates a session', async () => {
        const sid = unique('ghost');
        await a.sessions.touch(sid, record('s', at(60_000)));
        expect(await a.sessions.get(sid, at(0))).toBeNull();
      });

      it('an expired session reads as null and prune deletes it', async () => {
        const sid = unique('expired');
        const live = unique('live');
        await a.sessions.set(sid, record('s', at(1000)));
        await a.sessions.set(live, record('s', at(10 ** 12)));
        expect(await a.sessions.get(sid, at(999))).not.toBeNull();
        expect(await b.sessions.get(sid, at(1000))).toBeNull();
        expect(await b.sessions.prune(at(1000))).toBeGreaterThanOrEqual(1);
        expect(await a.sessions.get(sid, at(0))).toBeNull();
        expect(await a.sessions.get(live, at(0))).not.toBeNull();
      });
    });

    describe('purge', () => {
      async function seed(storeId: string, now = at(0), platformInstalledAt: Date | null = null) {
        await a.installations.save(storeId, sealed(storeId), { platformInstalledAt, now });
        await a.sessions.set(`${storeId}-sid`, {
          storeId,
          data: { storeId },
          expiresAt: at(10 ** 12),
        });
      }
      const present = async (storeId: string) => ({
        installation: (await a.installations.get(storeId)) !== null,
        session: (await a.sessions.get(`${storeId}-sid`, at(0))) !== null,
      });

      it("deletes the store's installation and sessions, leaves other stores, runs effects inside", async () => {
        const gone = unique('gone');
        const kept = unique('kept');
        await seed(gone);
        await seed(kept);
        let seenTx = false;
        const result = await b.purge(gone, {
          now: at(1000),
          effects: async (tx) => {
            seenTx = tx !== undefined;
            if (options.txProbe) await options.txProbe.write(tx, gone);
            return { app_rows: 7 };
          },
        });
        expect(result.purged).toBe(true);
        expect(result.counts).toMatchObject({ app_rows: 7 });
        expect(seenTx).toBe(true);
        expect(await present(gone)).toEqual({ installation: false, session: false });
        expect(await present(kept)).toEqual({ installation: true, session: true });
        if (options.txProbe) expect(await options.txProbe.count(gone)).toBe(1);
        // Idempotent without an event time.
        expect((await a.purge(gone, { now: at(2000) })).purged).toBe(true);
      });

      it('effects that throw roll everything back and the error comes back unchanged', async () => {
        const storeId = unique('rollback');
        await seed(storeId);
        const failure = new Error('external system down');
        await expect(
          a.purge(storeId, {
            now: at(1000),
            effects: async (tx) => {
              if (options.txProbe) await options.txProbe.write(tx, storeId);
              throw failure;
            },
          }),
        ).rejects.toBe(failure);
        expect(await present(storeId)).toEqual({ installation: true, session: true });
        if (options.txProbe) expect(await options.txProbe.count(storeId)).toBe(0);
        expect((await a.purge(storeId, { now: at(2000) })).purged).toBe(true);
        expect(await present(storeId)).toEqual({ installation: false, session: false });
      });

      it('ifInstalledBefore: a reinstall newer than the uninstall event is kept', async () => {
        const storeId = unique('late');
        await seed(storeId, at(10_000));
        let effects = 0;
        const run = (before: Date) =>
          a.purge(storeId, {
            now: at(20_000),
            ifInstalledBefore: before,
            effects: async () => {
              effects++;
              return {};
            },
          });
        expect(await run(at(9_999))).toEqual({ purged: false, counts: {} });
        expect(effects).toBe(0);
        expect(await present(storeId)).toEqual({ installation: true, session: true });
        expect((await run(at(10_000))).purged).toBe(true);
        expect(effects).toBe(1);
        expect((await present(storeId)).installation).toBe(false);
      });

      it('sweep: deletes what was written after the purge, keeps a newer install, records only a non-empty run', async () => {
        const storeId = unique('sweep');
        await seed(storeId, at(0));
        const event = { now: at(5000), ifInstalledBefore: at(1000) };
        expect((await a.purge(storeId, event)).purged).toBe(true);
        // A request in flight at the purge (or another instance's stale cache) writes a session.
        await b.sessions.set(`${storeId}-sid`, { storeId, data: {}, expiresAt: at(10 ** 12) });
        // A plain redelivery is a duplicate; the sweep is not.
        expect(await a.purge(storeId, event)).toEqual({ purged: false, counts: {} });
        let effects = 0;
        const sweep = await b.purge(storeId, {
          ...event,
          now: at(65_000),
          sweep: true,
          effects: async () => {
            effects++;
            return {};
          },
        });
        expect(sweep.purged).toBe(true);
        expect(sweep.counts).toMatchObject({ store_app_sessions: 1 });
        expect(effects).toBe(1);
        expect(await present(storeId)).toEqual({ installation: false, session: false });
        // Reinstalled after the purge: the sweep touches nothing, even when the
        // platform's install time (whole seconds) compares older than the event.
        await seed(storeId, at(70_000), at(999));
        expect(
          await a.purge(storeId, {
            ...event,
            now: at(125_000),
            sweep: true,
            effects: async () => ({}),
          }),
        ).toEqual({ purged: false, counts: {} });
        expect(await present(storeId)).toEqual({ installation: true, session: true });
      });

      it('outbox: the purge settles its entry in its own transaction (sweep due after the horizon)', async () => {
        const storeId = unique('settle');
        const eventId = unique('evt-settle');
        await seed(storeId);
        await a.purgeOutbox.add({ eventId, storeId, eventAt: at(1000) }, at(1000));
        const [leased] = await a.purgeOutbox.lease(at(2000), {
          owner: 'worker',
          until: at(60_000),
          limit: 1,
          eventId,
        });
        expect(leased?.eventId).toBe(eventId);
        const event = { ifInstalledBefore: at(1000), outbox: { eventId, sweepAfterMs: 60_000 } };
        // Rolled back with the purge: still a purge, still leased.
        await expect(
          a.purge(storeId, {
            ...event,
            now: at(3000),
            effects: async () => {
              throw new Error('down');
            },
          }),
        ).rejects.toThrow('down');
        expect((await a.purgeOutbox.get(eventId))?.kind).toBe('purge');
        expect(
          await a.purgeOutbox.lease(at(4000), {
            owner: 'other',
            until: at(9000),
            limit: 5,
            eventId,
          }),
        ).toEqual([]);
        // Committed: a sweep, due the horizon after the commit, lease freed.
        expect((await a.purge(storeId, { ...event, now: at(5000) })).purged).toBe(true);
        const sweep = await a.purgeOutbox.get(eventId);
        expect(sweep).toMatchObject({ kind: 'sweep', attempts: 0, lastError: null });
        const due = sweep?.nextAttemptAt.getTime() ?? 0;
        expect(due).toBeGreaterThanOrEqual(at(65_000).getTime());
        expect(due).toBeLessThan(at(65_000 + 60_000).getTime());
        expect(await a.purgeOutbox.due(at(64_999), 1000)).not.toContainEqual(
          expect.objectContaining({ eventId }),
        );
        // A redelivery's re-run is a skipped duplicate: the sweep stays.
        expect((await a.purge(storeId, { ...event, now: at(6000) })).purged).toBe(false);
        expect((await a.purgeOutbox.get(eventId))?.kind).toBe('sweep');
        // The sweep's own run (horizon 0) deletes the entry with it.
        const swept = await b.purge(storeId, {
          ...event,
          now: at(70_000),
          sweep: true,
          outbox: { eventId, sweepAfterMs: 0 },
        });
        expect(swept.purged).toBe(true);
        expect(await a.purgeOutbox.get(eventId)).toBeNull();
      });

      it("compares with the platform's install time when the row has one", async () => {
        const storeId = unique('platform-clock');
        // Installed at 100 s in our clock, at 5 s in the platform's.
        await seed(storeId, at(100_000), at(5_000));
        expect(
          (await a.purge(storeId, { now: at(200_000), ifInstalledBefore: at(4_999) })).purged,
        ).toBe(false);
        expect(
          (await a.purge(storeId, { now: at(200_000), ifInstalledBefore: at(6_000) })).purged,
        ).toBe(true);
        expect((await present(storeId)).installation).toBe(false);
      });

      it('a reinstall landing while a late uninstall purges (another process) survives it', async () => {
        const storeId = unique('reinstall-during-purge');
        await a.sessions.set(`${storeId}-sid`, { storeId, data: {}, expiresAt: at(10 ** 12) });
        let reinstall: Promise<unknown> | undefined;
        const result = await a.purge(storeId, {
          now: at(3000),
          ifInstalledBefore: at(1000),
          effects: async () => {
            // Not awaited: the other process commits whenever its database lets it.
            reinstall = b.installations.save(storeId, sealed('fresh'), {
              platformInstalledAt: null,
              now: at(2000),
            });
            await new Promise((r) => setTimeout(r, 10));
            return {};
          },
        });
        await reinstall;
        expect(result.purged).toBe(true);
        expect((await a.installations.get(storeId))?.installedAt).toEqual(at(2000));
      });

      it('a duplicate of one uninstall event (even racing across processes) runs effects once', async () => {
        const storeId = unique('twice');
        await seed(storeId);
        let effects = 0;
        const event = {
          now: at(5000),
          ifInstalledBefore: at(1000),
          effects: async () => {
            effects++;
            return {};
          },
        };
        const results = await Promise.all([a.purge(storeId, event), b.purge(storeId, event)]);
        expect(results.filter((r) => r.purged)).toHaveLength(1);
        expect(await a.purge(storeId, event)).toEqual({ purged: false, counts: {} });
        // An older event than the one purged is a duplicate too.
        expect(await b.purge(storeId, { ...event, ifInstalledBefore: at(500) })).toEqual({
          purged: false,
          counts: {},
        });
        expect(effects).toBe(1);
      });
    });

    describe('clock', () => {
      it("clock(), when the adapter has one: the database's time (the kit's one clock), moving forward", async () => {
        if (!a.clock) return;
        // The one case that reads real time: a database's clock is real time.
        const first = await a.clock();
        expect(first).toBeInstanceOf(Date);
        expect(Math.abs(first.getTime() - Date.now())).toBeLessThan(60_000);
        await new Promise((r) => setTimeout(r, 20));
        const second = await b.clock!();
        expect(second.getTime()).toBeGreaterThan(first.getTime());
      });
    });

    describe('failures', () => {
      it('a closed adapter rejects with StorageError, never answers "not found"', async () => {
        const closed = await options.open();
        await closed.close();
        const outcome = await closed.installations.get(unique('any')).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
        expect(outcome).toHaveProperty('error');
        expect((outcome as { error: { code?: unknown } }).error.code).toBe('STORAGE_UNAVAILABLE');
      });
    });
  });
}
