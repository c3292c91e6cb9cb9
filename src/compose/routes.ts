/**
 * The kit's route table, spelled once: install begin `{auth.path}`, the callback
 * `{auth.callbackPath}`, the session-token swap `{auth.path}/session-token`, the
 * browser module `{auth.path}/browser.js`, the
 * webhook receiver `{webhooks.path}` and, when configured, `{health.path}`, each
 * relative to the app URL's path. Both shells mount it (src/core/routes.ts).
 */

import type { AuthDecision } from '../authenticated/authenticate.js';
import { createSessionTokenRoute } from '../authenticated/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { BROWSER_MODULE_PATH, createBrowserModuleRoute } from '../core/browser-module-route.js';
import type { CoreRequest } from '../core/http.js';
import { createKitRoutes, type KitRoute, type KitRoutes } from '../core/routes.js';
import type { HealthCheck } from '../health/index.js';
import { createInstallBegin } from '../install/begin.js';
import { createInstallCallback } from '../install/callback.js';
import type { InstallContext } from '../install/context.js';
import { SPAN } from '../telemetry/index.js';
import type { KitWebhooks } from '../webhooks/index.js';

export interface KitRouteDeps {
  config: Pick<ResolvedConfig, 'auth' | 'health'>;
  install: InstallContext;
  webhooks: KitWebhooks;
  health: HealthCheck;
  authenticate(req: CoreRequest): Promise<AuthDecision>;
}

/** The kit's routes, wrapped once (spans, challenge) for both shells. */
export function kitRoutes(deps: KitRouteDeps): KitRoutes {
  const { auth, health } = deps.config;
  const table: KitRoute[] = [
    {
      id: 'install.begin',
      methods: ['GET'],
      path: auth.path,
      audience: 'browser',
      span: SPAN.installBegin,
      handler: createInstallBegin(deps.install),
    },
    {
      id: 'install.callback',
      methods: ['GET'],
      path: auth.callbackPath,
      audience: 'browser',
      span: SPAN.installCallback,
      handler: createInstallCallback(deps.install),
    },
    {
      // The page swaps its cookie session for a bearer token.
      id: 'session-token',
      methods: ['GET'],
      path: `${auth.path}/session-token`,
      audience: 'browser',
      handler: createSessionTokenRoute(deps.authenticate),
    },
    {
      // store-app-kit/browser for a plain <script type="module">: a public file, no session.
      id: 'browser-module',
      methods: ['GET'],
      path: auth.path + BROWSER_MODULE_PATH,
      audience: 'machine',
      handler: createBrowserModuleRoute(),
    },
    {
      id: 'webhooks',
      methods: ['POST'],
      path: deps.webhooks.path,
      audience: 'machine',
      span: SPAN.webhook,
      handler: deps.webhooks.handler,
    },
  ];
  if (health.path !== null) {
    table.push({
      id: 'health',
      methods: ['GET'],
      path: health.path,
      audience: 'machine',
      handler: deps.health.coreHandler(),
    });
  }
  return createKitRoutes(table);
}
