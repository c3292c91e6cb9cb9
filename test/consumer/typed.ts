// Type assertions a consumer relies on, checked against the packed tarball
// (copied into the fixture's src/ by scripts/check-package.js).
import express from 'express';
import {
  type CustomStorageStoreAppKit,
  type StoreAppKit,
  type StoreAppOptions,
  storeApp,
} from 'store-app-kit';
import {
  type SealedTokens,
  type StorageAdapter,
  StorageError,
  type StoredInstallation,
} from 'store-app-kit/storage';

declare const kit: StoreAppKit;

// kit.db is typed once the dialect is known.
if (kit.dialect === 'sqlite') {
  kit.db.run;
  // @ts-expect-error: the SQLite handle has no Postgres-only `execute`
  kit.db.execute;
} else {
  kit.db.execute;
}

const app = express();
// res.locals.store is typed on handlers after kit.authenticated()...
app.get('/typed', kit.authenticated(), (_req, res) => {
  const id: string = res.locals.store.storeId;
  res.json({ id });
});
// ...and not declared on routes without it (no global augmentation by default).
app.get('/untyped', (_req, res) => {
  const locals: Record<string, unknown> = res.locals;
  res.json({ has: 'store' in locals });
});

export const started: Promise<StoreAppKit> = storeApp();

// store-app-kit/storage: an adapter author's types. Tokens reach an adapter as ciphertext only.
declare const adapter: StorageAdapter<{ query(text: string): Promise<unknown> }>;
const sealedAccess: SealedTokens['accessTokenEnc'] = 'eyJ…';
// @ts-expect-error: an adapter's installation has no plaintext token field
const plaintext: StoredInstallation['accessToken'] = sealedAccess;
export const unavailable: Error = new StorageError('down; check the database');
// With an adapter, storeApp() returns the kit without a Drizzle handle.
export const custom: Promise<CustomStorageStoreAppKit> = storeApp({ storage: { adapter } });
custom.then((k) => {
  const none: undefined = k.db;
  return none ?? plaintext;
});
// Options whose adapter is only known at run time: the kit is either kind, narrowed by dialect.
declare const someOptions: StoreAppOptions;
export const either: Promise<StoreAppKit | CustomStorageStoreAppKit> = storeApp(someOptions);
either.then((k) => (k.dialect === 'custom' ? k.db : k.db.select));
// @ts-expect-error: without narrowing, kit.db may be undefined (custom storage)
either.then((k) => k.db.select);
