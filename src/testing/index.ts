/**
 * `store-app-kit/testing`: test helpers for people who extend the kit. Needs
 * vitest (an optional peer dependency, only for this entry); the main entry
 * never imports this file.
 */
export { defineStorageAdapterSuite, type StorageAdapterSuiteOptions } from './storage-suite.js';
