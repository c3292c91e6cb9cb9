/**
 * `store-app-kit/storage`: the public storage seam. Implement `StorageAdapter`
 * to keep the kit's data in your own database, pass it as
 * `storeApp({ storage: { adapter } })`, and check it with
 * `defineStorageAdapterSuite` from `store-app-kit/testing`. The contract and
 * its semantics: ./contract.ts and docs/storage.md ("Writing an adapter").
 */

export { STORAGE_UNAVAILABLE, StorageError } from '../errors/index.js';
export type {
  AdapterPurgeOptions,
  DeliveryScope,
  InstallationAdapter,
  PendingPurgeEntry,
  PendingPurgeKind,
  PendingPurgeLease,
  PendingPurgeRecord,
  PurgeCounts,
  PurgeOutboxAdapter,
  PurgeResult,
  RefreshLeaseAdapter,
  RunOnceResult,
  SealedTokens,
  SessionAdapter,
  SessionRecord,
  StorageAdapter,
  StoredInstallation,
  WebhookAdapter,
} from './contract.js';
export { STORAGE_ADAPTER_METHODS } from './contract.js';
