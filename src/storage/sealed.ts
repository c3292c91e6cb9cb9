/**
 * The kit side of the storage seam: turns any StorageAdapter (./contract.ts)
 * into the Storage the rest of the kit uses (./types.ts). Encryption lives
 * here, above every adapter: tokens are sealed (compact JWE bound to the store
 * id) before an adapter sees them and opened after it returns them, so no
 * adapter, built-in or third-party, ever holds a plaintext token. Inputs are
 * checked here once, so adapters receive only valid values.
 */

import type { Logger } from 'pino';
import type { TokenCipher } from '../crypto/index.js';
import { randomUUID } from '../crypto/primitives.js';
import { ConfigError } from '../errors/index.js';
import type { BuiltinStorageAdapter } from './builtin.js';
import { createDatabaseClock } from './clock.js';
import { createCompleteBatch } from './complete-batch.js';
import type { PurgeCounts, SealedTokens, StorageAdapter, StoredInstallation } from './contract.js';
import { AdapterSessionStore } from './session-store.js';
import type { Installation, Storage, TokenSet } from './types.js';

const CLAIM_PART_MAX = 256;
/** Far enough ahead that every pending purge is "due": the outbox listing. */
const END_OF_TIME = new Date(Date.UTC(9999, 11, 31));
const LIST_PENDING_MAX = 10_000;
/** How long rotate-keys holds a row's refresh lease while it re-encrypts it. */
const REWRAP_LEASE_MS = 30_000;

export interface SealOptions {
  cipher: TokenCipher;
  logger?: Logger | undefined;
  /** The built-in adapter's extras (`kit.db`, transactions, app tables), when it is one. */
  builtin?: BuiltinStorageAdapter | undefined;
}

/**
 * An installation from a row's columns and its two tokens in clear: decrypted from the
 * row (`open`), or the tokens a refresh just sealed into it (decrypting them back would
 * cost two AES-GCM opens per refreshed store for the same strings).
 */
function installationOf(
  storeId: string,
  tokens: Pick<TokenSet, 'accessToken' | 'refreshToken'>,
  row: Pick<
    Installation,
    'scopes' | 'accessTokenExpiresAt' | 'installedAt' | 'updatedAt' | 'version' | 'needsReauth'
  > & { platformInstalledAt?: Date | null | undefined },
): Installation {
  return {
    storeId,
    scopes: [...row.scopes],
    accessToken: tokens.accessToken,
    refreshToken: tokens.refreshToken,
    accessTokenExpiresAt: row.accessTokenExpiresAt,
    installedAt: row.installedAt,
    updatedAt: row.updatedAt,
    version: row.version,
    needsReauth: row.needsReauth,
    platformInstalledAt: row.platformInstalledAt ?? null,
  };
}

/** Builds the kit's Storage on `adapter`; the adapter only ever sees ciphertext. */
export function sealStorage(adapter: StorageAdapter, options: SealOptions): Storage {
  const { cipher, builtin } = options;
  const sessionStores = new Set<AdapterSessionStore>();

  async function open(row: StoredInstallation): Promise<Installation> {
    // Two ciphertexts (each token has its field, so rotate-keys and refresh
    // rewrite them alike); decrypted side by side, one wait instead of two.
    const [accessToken, refreshToken] = await Promise.all([
      cipher.decrypt(row.accessTokenEnc, row.storeId),
      row.refreshTokenEnc === null ? null : cipher.decrypt(row.refreshTokenEnc, row.storeId),
    ]);
    return installationOf(row.storeId, { accessToken, refreshToken }, row);
  }

  async function seal(storeId: string, tokens: TokenSet): Promise<SealedTokens> {
    if (
      !(tokens.accessTokenExpiresAt instanceof Date) ||
      Number.isNaN(+tokens.accessTokenExpiresAt)
    ) {
      // A missing expiry would never be refreshed again; refuse it here.
      throw new ConfigError('accessTokenExpiresAt', 'must be a valid Date when storing tokens');
    }
    return {
      scopes: [...tokens.scopes],
      accessTokenEnc: await cipher.encrypt(tokens.accessToken, storeId),
      refreshTokenEnc:
        tokens.refreshToken === null ? null : await cipher.encrypt(tokens.refreshToken, storeId),
      keyId: cipher.currentKid,
      accessTokenExpiresAt: tokens.accessTokenExpiresAt,
    };
  }

  const { installations: rows, refreshLease } = adapter;
  // One clock for every instance on the database (./clock.ts).
  const clock = createDatabaseClock(adapter.clock ? () => adapter.clock!() : undefined);
  const dbNow = () => clock.now();
  const claimDue = refreshLease.claimDue?.bind(refreshLease);
  const completeMany = refreshLease.completeMany?.bind(refreshLease);
  /** Refreshed pairs landing together share one write where the adapter can (./complete-batch.ts). */
  const completing = completeMany
    ? createCompleteBatch((items) =>
        atDbNow(async (now) =>
          (await completeMany(items, now)).map((row) => (row ? { ...row, updatedAt: now } : null)),
        ),
      )
    : undefined;
  /**
   * Runs `fn` with the database's now, without yielding when a reading exists:
   * writes that come together (SQLite's group commit) stay in one turn.
   */
  const atDbNow = <T>(fn: (now: Date) => Promise<T>): Promise<T> => {
    const known = clock.peek();
    return known ? fn(known) : dbNow().then(fn);
  };

  return {
    dialect: builtin?.dialect ?? 'custom',
    db: builtin?.db,
    installations: {
      async get(storeId) {
        const row = await rows.get(storeId);
        return row ? open(row) : null;
      },
      async list() {
        return Promise.all(byStoreId(await rows.list()).map(open));
      },
      async upsert(storeId, tokens, metadata = {}) {
        const sealed = await seal(storeId, tokens);
        return open(
          await rows.save(storeId, sealed, {
            platformInstalledAt: metadata.platformInstalledAt ?? null,
            now: await dbNow(),
          }),
        );
      },
      acquireRefreshLease(storeId, expectedVersion, owner, leaseMs) {
        return atDbNow((now) =>
          refreshLease.acquire(
            storeId,
            expectedVersion,
            owner,
            new Date(now.getTime() + leaseMs),
            now,
          ),
        );
      },
      async completeRefresh(storeId, owner, tokens) {
        const sealed = await seal(storeId, tokens);
        if (completing) {
          const row = await completing.add({ storeId, owner, tokens: sealed });
          // The grouped write returns only what it set besides the tokens.
          return row
            ? installationOf(storeId, tokens, {
                ...row,
                scopes: tokens.scopes,
                accessTokenExpiresAt: tokens.accessTokenExpiresAt,
                needsReauth: false,
              })
            : null;
        }
        const row = await atDbNow((now) => refreshLease.complete(storeId, owner, sealed, now));
        return row ? installationOf(storeId, tokens, row) : null;
      },
      ...(claimDue
        ? {
            async claimDueForRefresh(
              before: Date,
              limit: number,
              owner: string,
              leaseMs: number,
              exclude: readonly string[],
            ) {
              // The lease's end in the database's clock, like acquireRefreshLease.
              const rows = await atDbNow((now) =>
                claimDue(before, limit, owner, new Date(now.getTime() + leaseMs), now, exclude),
              );
              return Promise.all(rows.map(open));
            },
          }
        : {}),
      releaseRefreshLease: (storeId, owner) => refreshLease.release(storeId, owner),
      markNeedsReauth: (storeId, expectedVersion) => rows.markNeedsReauth(storeId, expectedVersion),
      listExpiringBefore: (before, limit) => rows.listExpiringBefore(before, limit),
      async listStoreIds() {
        return byStoreId(await rows.list()).map((r) => r.storeId);
      },
      async reencrypt(storeId) {
        // Under the refresh lease, like a refresh: a refresh landing meanwhile
        // either waits for us or wins (version moved), and is never overwritten.
        for (let attempt = 0; attempt < 5; attempt++) {
          if (attempt > 0) await new Promise((r) => setTimeout(r, 100 * attempt));
          const row = await rows.get(storeId);
          if (!row) return false;
          const stale =
            cipher.needsReencrypt(row.accessTokenEnc) ||
            (row.refreshTokenEnc !== null && cipher.needsReencrypt(row.refreshTokenEnc));
          if (!stale) return false;
          const current = await open(row);
          const owner = `rotate-keys:${randomUUID()}`;
          const now = await dbNow();
          const until = new Date(now.getTime() + REWRAP_LEASE_MS);
          if (!(await refreshLease.acquire(storeId, row.version, owner, until, now))) continue;
          try {
            const sealed = await seal(storeId, current);
            if (await refreshLease.complete(storeId, owner, sealed, await dbNow())) return true;
          } catch (err) {
            await refreshLease.release(storeId, owner).catch(() => undefined);
            throw err;
          }
        }
        return false;
      },
    },
    webhooks: {
      async runOnce(webhookId, topic, effects) {
        // Without yielding once the clock was read: deliveries arriving together
        // must reach SQLite's group commit in the same turn (and before a close).
        const receivedAt = clock.peek() ?? (await dbNow());
        return adapter.webhooks.runOnce({ webhookId, topic, receivedAt }, (scope) =>
          effects(scope.tx, { addPendingPurge: (entry) => scope.addPendingPurge(entry) }),
        );
      },
      pruneDeliveries: (before) => adapter.webhooks.prune(before),
    },
    pendingPurges: {
      add: (entry) => atDbNow((now) => adapter.purgeOutbox.add(entry, now)),
      async list() {
        const all = await adapter.purgeOutbox.due(END_OF_TIME, LIST_PENDING_MAX);
        return all
          .filter((p) => p.kind !== 'sweep')
          .sort(
            (a, b) =>
              a.createdAt.getTime() - b.createdAt.getTime() || a.eventId.localeCompare(b.eventId),
          );
      },
      due: (now, limit) => adapter.purgeOutbox.due(now, limit),
      get: (eventId) => adapter.purgeOutbox.get(eventId),
      lease: (lease) => atDbNow((now) => adapter.purgeOutbox.lease(now, lease)),
      recordFailure: (eventId, nextAttemptAt, errorCode) =>
        adapter.purgeOutbox.recordFailure(eventId, nextAttemptAt, errorCode.slice(0, 64)),
      complete: (eventId, sweepAt) => adapter.purgeOutbox.complete(eventId, sweepAt),
    },
    sessions(storeOptions) {
      const store = new AdapterSessionStore(adapter.sessions, storeOptions, options.logger);
      sessionStores.add(store);
      return store;
    },
    async transaction(fn) {
      if (!builtin) throw customAdapterOnly('storage.transaction()');
      return builtin.transaction(fn);
    },
    async purge(storeId, purgeOptions = { tables: [] }) {
      const tables = purgeOptions.tables ?? [];
      const scoped = builtin ? builtin.scopedTables(tables) : [];
      if (!builtin && tables.length > 0) throw customAdapterOnly('storeScopedTables');
      const { onPurge, ifInstalledBefore, sweep, onCommitted, outbox } = purgeOptions;
      const effects =
        scoped.length > 0 || onPurge
          ? async (tx: unknown): Promise<PurgeCounts> => {
              const counts = builtin ? await builtin.deleteStoreRows(scoped, storeId) : {};
              if (onPurge) await onPurge(storeId, tx);
              return counts;
            }
          : undefined;
      return adapter.purge(storeId, {
        now: await dbNow(),
        ...(ifInstalledBefore ? { ifInstalledBefore } : {}),
        ...(sweep ? { sweep } : {}),
        ...(effects ? { effects } : {}),
        ...(onCommitted ? { onCommitted } : {}),
        ...(outbox ? { outbox } : {}),
      });
    },
    async claimOnce(namespace, id, expiresAt) {
      if (
        typeof namespace !== 'string' ||
        typeof id !== 'string' ||
        namespace.length === 0 ||
        id.length === 0 ||
        namespace.length > CLAIM_PART_MAX ||
        id.length > CLAIM_PART_MAX ||
        !(expiresAt instanceof Date) ||
        Number.isNaN(expiresAt.getTime())
      ) {
        throw new ConfigError(
          'claimOnce',
          'needs a namespace and an id (1-256 characters) and a valid expiry date',
        );
      }
      // The caller's expiry is in its instance's clock: kept as the same
      // distance from the database's now, so instances share one clock.
      const now = await dbNow();
      const dbExpiresAt = new Date(now.getTime() + (expiresAt.getTime() - Date.now()));
      return adapter.claimOnce(namespace, id, dbExpiresAt, now);
    },
    now: dbNow,
    async migrate() {
      await adapter.migrate();
      // The first reading now, so the first request does not wait for it.
      await dbNow().catch(() => undefined);
    },
    async close() {
      for (const store of sessionStores) store.close();
      sessionStores.clear();
      await adapter.close();
    },
  };
}

/** One order whatever the database's collation: code units, as the CLI lists them. */
function byStoreId(rows: StoredInstallation[]): StoredInstallation[] {
  return rows.sort((x, y) => (x.storeId < y.storeId ? -1 : x.storeId > y.storeId ? 1 : 0));
}

function customAdapterOnly(what: string): ConfigError {
  return new ConfigError(
    what,
    'needs the built-in database (DATABASE_URL); with storage.adapter, use your own database for app tables and delete them in onPurge',
  );
}
