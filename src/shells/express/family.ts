/**
 * The Express family (express, helmet), loaded on first use. The Express shell itself
 * runs on the app's own Express and loads neither (`kit.middleware()` is a plain
 * function); helmet is loaded for `securityHeaders.helmet` options only, so an app that
 * serves the kit through `kit.fetch` never loads any of them
 * (`test/packaging/import-graph.test.ts`). They are
 * CommonJS packages, required synchronously here so both calls stay synchronous and
 * return the real handlers (no wrapper per request). express-session is not among
 * them: the kit's browser session is its own (core/browser-session.ts).
 */
import { createRequire } from 'node:module';
import type * as ExpressModule from 'express';
import type * as HelmetModule from 'helmet';
import { assertSupportedExpress } from './express-version.js';

export interface ExpressFamily {
  express: typeof ExpressModule;
  helmet: typeof HelmetModule.default;
}

let family: ExpressFamily | undefined;

/** The Express family (the app's express, as a peer dependency; Express 5 checked once). */
export function expressFamily(): ExpressFamily {
  if (family) return family;
  assertSupportedExpress();
  const require = createRequire(import.meta.url);
  const helmet = require('helmet') as typeof HelmetModule & {
    default?: typeof HelmetModule.default;
  };
  family = {
    express: require('express') as typeof ExpressModule,
    helmet: (helmet.default ?? helmet) as typeof HelmetModule.default,
  };
  return family;
}
