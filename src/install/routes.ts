/**
 * Express glue for the install flow: `GET {auth.path}` (begin) and
 * `GET {auth.callbackPath}` (callback). The flow itself is framework-free
 * (./begin.ts, ./callback.ts, ./callback-outcomes.ts); this file only mounts
 * the core handlers through the Express shell, under their spans.
 */
import { Router } from 'express';
import { expressHandler } from '../shells/express/handler.js';
import { SPAN, spanHandler } from '../telemetry/index.js';
import { createInstallBegin } from './begin.js';
import { createInstallCallback } from './callback.js';
import { createInstallContext, type InstallContext, type InstallRoutesDeps } from './context.js';

export { CODE_CLAIM_NAMESPACE, CODE_REPLAY_WINDOW_MS } from './callback.js';
export type { InstallRoutesConfig, InstallRoutesDeps } from './context.js';

/**
 * The install routes (`auth.path`, `auth.callbackPath`), added to `router`
 * (a new Router when not given). The kit adds them to its own router: a
 * nested Router costs every request that passes the mount a dispatch of its own.
 */
export function createInstallRoutes(
  deps: InstallRoutesDeps,
  router: Router = Router(),
  /** Shared with the Fetch shell (one set of callback limits per kit). */
  ctx: InstallContext = createInstallContext(deps),
): Router {
  const { auth } = deps.config;
  const begin = expressHandler(createInstallBegin(ctx), deps.logger);
  const callback = expressHandler(createInstallCallback(ctx), deps.logger);
  router.get(auth.path, spanHandler(SPAN.installBegin, begin));
  router.get(auth.callbackPath, spanHandler(SPAN.installCallback, callback));
  return router;
}
