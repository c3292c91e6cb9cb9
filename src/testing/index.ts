/**
 * `store-app-kit/testing`: helpers for an app's own tests, for any test
 * runner (vitest, node:test, jest). Loads no vitest, no driver and nothing of
 * the local platform (it is handed a started one). The storage conformance
 * suite, which needs vitest, is `store-app-kit/testing/adapter-suite`.
 */
export {
  type InstalledStore,
  type InstallStoreOptions,
  installStore,
  type SendWebhookOptions,
  type SentWebhook,
  sendWebhook,
} from './helpers.js';
