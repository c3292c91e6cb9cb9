// The local platform of the peer bench, in a process of its own (forked by server.js), as
// a real app's platform is: not in the app's process. With the platform and its 1,000
// installed stores in the kit side's process, bare Hono's route served from that process
// read 0.84 of bare Hono's CPU per request with nothing of the kit on the route (route
// ablation, 2026-11-29): the bench charged the kit for a process it never shares.
//
// Forked with { app: registerApp's options, stores: N, redirectUri }; starts the platform,
// registers the app, creates N stores and issues each a token pair over HTTP (the code
// exchange, as an install does); sends { authUrl, registered, installs: [{ storeId,
// tokens }] }; on 'close' closes the platform and exits.
// BENCH_KIT_DIST: the build whose local platform to start (default: this checkout's dist/).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { issueTokens } from '../lib.js';

const dist = process.env.BENCH_KIT_DIST
  ? pathToFileURL(`${resolve(process.env.BENCH_KIT_DIST)}/`)
  : new URL('../../dist/', import.meta.url);

/** Creates `count` stores on `platform` and issues each a token pair for `registered`. */
export async function installStores(platform, registered, { stores, redirectUri, scopes }) {
  const installs = [];
  for (let i = 0; i < stores; i++) {
    const { storeId } = platform.createStore({ seed: 1 });
    const tokens = await issueTokens(platform, {
      app: registered,
      storeId,
      redirectUri,
      scopes,
    });
    installs.push({ storeId, tokens });
  }
  return installs;
}

/** The platform with the app registered and its stores installed, in this process. */
export async function startBenchPlatform({ app, stores, redirectUri }) {
  const { startPlatform } = await import(new URL('platform/index.js', dist).href);
  const platform = await startPlatform();
  const registered = platform.registerApp(app);
  const installs = await installStores(platform, registered, {
    stores,
    redirectUri,
    scopes: app.scopes,
  });
  return { platform, registered, installs };
}

if (process.send && process.argv[2] === 'serve') {
  // The bench's server went away without a 'close' (killed): so does its platform.
  process.once('disconnect', () => process.exit(0));
  process.once('message', async (setup) => {
    const { platform, registered, installs } = await startBenchPlatform(setup);
    process.on('message', async (m) => {
      if (m === 'close') {
        await platform.close();
        process.exit(0);
      }
    });
    process.send({
      authUrl: platform.authUrl,
      registered: { clientId: registered.clientId, clientSecret: registered.clientSecret },
      installs,
    });
  });
}
