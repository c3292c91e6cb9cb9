/**
 * The kit needs Express 5 and refuses Express 4 at start. Express 4 does not
 * pass a rejected promise from an async handler to `next`, so the first API
 * error thrown in an async route (the client throws typed errors by design)
 * would crash the process instead of reaching the kit's error handler; its
 * path syntax also differs. Supporting both would mean wrapping every user
 * handler; Express 5 has been the default on npm since 2025.
 */
import { createRequire } from 'node:module';
import { StoreAppError } from '../../errors/index.js';

export const EXPRESS_UNSUPPORTED = 'EXPRESS_UNSUPPORTED' as const;

/** The installed Express is not a version the kit supports. */
export class ExpressVersionError extends StoreAppError<typeof EXPRESS_UNSUPPORTED> {
  /** The version found, e.g. `4.21.2`. */
  readonly version: string;
  constructor(version: string) {
    super(
      EXPRESS_UNSUPPORTED,
      `store-app-kit needs Express 5, but express@${version} is installed; ` +
        'run `npm install express@5` (Express 4 does not send errors thrown in async routes to ' +
        'the error handler, so one failed API call would crash the app)',
    );
    this.version = version;
  }
}

/** Throws ExpressVersionError unless `version` is 5 or later. */
export function checkExpressVersion(version: string): void {
  const major = Number.parseInt(version, 10);
  if (!(major >= 5)) throw new ExpressVersionError(version);
}

/** The version of the `express` this package resolves (the app's, as a peer dependency). */
export function installedExpressVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('express/package.json') as { version: string }).version;
}

let checked = false;
/** Checks the installed Express once per process. */
export function assertSupportedExpress(): void {
  if (checked) return;
  checkExpressVersion(installedExpressVersion());
  checked = true;
}
