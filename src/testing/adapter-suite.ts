/**
 * `store-app-kit/testing/adapter-suite`: the storage conformance suite adapter
 * authors run in their vitest. Needs vitest (an optional peer dependency, only
 * for this entry); `store-app-kit/testing` never imports it.
 */
export { defineStorageAdapterSuite, type StorageAdapterSuiteOptions } from './storage-suite.js';
