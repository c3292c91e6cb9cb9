/**
 * The short adapter example of docs/storage.md ("Writing an adapter") is
 * code, not prose: it is taken from the page as written and must pass the
 * conformance suite (check:package type-checks it as a consumer would).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll } from 'vitest';
import type { StorageAdapter } from '../../src/storage/contract.js';
import { defineStorageAdapterSuite } from '../../src/testing/adapter-suite.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const page = readFileSync(join(root, 'docs', 'storage.md'), 'utf8');
const block = /<!-- example: memory-adapter -->\n```ts\n([\s\S]*?)\n```/.exec(page)?.[1];
if (block === undefined) throw new Error('docs/storage.md lost its memory-adapter example');

const dir = mkdtempSync(join(tmpdir(), 'sak-docs-example-'));
mkdirSync(dir, { recursive: true });
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'memory-adapter.ts');
// The published entry, as an app imports it (dist/, built before the tests).
const entry = pathToFileURL(join(root, 'dist', 'storage', 'public.js')).href;
writeFileSync(file, block.replaceAll("'store-app-kit/storage'", `'${entry}'`));
const example = (await import(pathToFileURL(file).href)) as {
  createMemoryStore(): unknown;
  memoryAdapter(db: unknown): StorageAdapter<{ write(apply: () => void, undo: () => void): void }>;
};

const db = example.createMemoryStore();
const probe: string[] = [];
defineStorageAdapterSuite({
  name: 'docs/storage.md example',
  open: async () => example.memoryAdapter(db),
  txProbe: {
    async write(tx, key) {
      tx.write(
        () => probe.push(key),
        () => probe.splice(probe.lastIndexOf(key), 1),
      );
    },
    async count(key) {
      return probe.filter((k) => k === key).length;
    },
  },
});
