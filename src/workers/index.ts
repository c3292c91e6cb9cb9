/**
 * `store-app-kit/workers`: the kit on Cloudflare Workers. The same
 * composition as `storeApp()` on Node (src/compose/), with what a Worker has:
 * settings from the Worker's `env` instead of `process.env`, the app's
 * storage adapter (`d1Adapter(env.DB)` from `store-app-kit/storage/d1`), a
 * console logger instead of pino, no Express shell, and no timers between
 * requests. Nothing in this entry's import graph is a `node:` module or uses
 * `Buffer`, nor in `store-app-kit/hono`'s, which mounts this kit on Hono
 * (test/packaging/workers-graph.test.ts). See docs/runtimes.md.
 */
import { composeKit, type KitRuntime } from '../compose/index.js';
import { internalsOf, registerInternals } from '../compose/internals.js';
import { kitObject } from '../compose/kit-object.js';
import type { CustomStorageStoreAppKit } from '../compose/kit-types.js';
import type { StoreAppOptions } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { createConsoleLogger } from '../http/console-logger.js';
import { sealAdapterStorage } from '../storage/adapter-storage.js';
import type { StorageAdapter } from '../storage/contract.js';

/** `storeApp()` options on Workers: the storage is always the app's adapter. */
export type WorkersStoreAppOptions = StoreAppOptions & {
  storage: StoreAppOptions['storage'] & { adapter: StorageAdapter };
};

/** The kit on Workers: the Fetch API entry points, no Express ones, no Drizzle handle. */
export type WorkersStoreAppKit = Omit<CustomStorageStoreAppKit, 'middleware' | 'authenticated'> & {
  /**
   * One pass of the background work a long-lived process runs on timers: the
   * refresh sweep (tokens expiring soon) and the purge outbox (due pending
   * purges, each leased so two passes never run one twice). For a Worker's
   * `scheduled()` (Cron Triggers): `createWorker` does it.
   */
  runBackground(): Promise<{ refreshed: number; purged: number }>;
};

/** The part of a Worker's `ExecutionContext` the kit uses. */
export interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** A Worker's `env`: its variables and secrets (strings) and its bindings. */
export type WorkerEnv = object;

/** The string variables and secrets of a Worker's `env` (bindings are left out). */
function settingsOf(env: WorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}

function expressOnly(name: string): () => never {
  return () => {
    throw new ConfigError(
      name,
      'is the Express shell, which Workers do not have; use kit.fetch(request) and kit.authenticate(request)',
    );
  };
}

/**
 * Builds the kit inside a Worker: validates the options and `env` (the
 * `STORE_APP_*` variables and secrets, as `process.env` on Node), applies
 * the adapter's migrations (unless `storage.migrate: false`) and returns the
 * kit. Call it on the first request (a Worker's `env` and I/O belong to
 * requests), once per isolate: `createWorker` does.
 */
export async function storeApp(
  options: WorkersStoreAppOptions,
  env: WorkerEnv = {},
): Promise<WorkersStoreAppKit> {
  if (options?.storage?.adapter === undefined) {
    throw new ConfigError(
      'storage.adapter',
      'is required on Workers (no file system, no TCP driver): pass d1Adapter(env.DB) from store-app-kit/storage/d1',
    );
  }
  const runtime: KitRuntime = {
    env: settingsOf(env),
    createLogger: createConsoleLogger,
    openStorage: (config, logger) =>
      sealAdapterStorage({
        adapter: config.storage.adapter as StorageAdapter,
        encryptionKeys: config.storage.encryptionKeys,
        migrate: config.storage.migrate,
        logger: logger.child({ component: 'storage' }),
      }),
    background: 'on-demand',
  };
  const services = await composeKit(options, runtime);
  const kit = kitObject(services, {
    middleware: expressOnly('kit.middleware()'),
    authenticated: expressOnly('kit.authenticated()'),
  });
  const { middleware: _m, authenticated: _a, ...workersKit } = kit;
  // The kit's internals are keyed by the object kitObject() built; the Workers kit is a
  // copy without the Express entry points, so it gets them too: storeAppHono(kit)
  // (store-app-kit/hono) mounts the kit by them.
  registerInternals(workersKit, internalsOf(kit));
  return Object.assign(workersKit, {
    async runBackground() {
      const sweep = await services.api.tokens.sweep();
      const purged = await services.outbox.runDue();
      return { refreshed: sweep.refreshed, purged };
    },
  }) as WorkersStoreAppKit;
}

/** What `createWorker` is given. */
export interface WorkerSetup<Env extends WorkerEnv> {
  /** The kit's options for this Worker's `env` (its storage adapter over `env.DB`). */
  options(env: Env): WorkersStoreAppOptions;
  /**
   * The app's routes: every request the kit does not answer. Without it, 404.
   * `kit.authenticate(request)` finds the store, `kit.secureResponse` adds the headers;
   * on Hono, `storeAppHono(kit)` (`store-app-kit/hono`) mounts both.
   */
  fetch?(
    request: Request,
    env: Env,
    ctx: WorkerContext,
    kit: WorkersStoreAppKit,
  ): Response | Promise<Response>;
}

/** A Worker's handlers (`export default createWorker(…)`). */
export interface StoreAppWorker<Env extends WorkerEnv> {
  fetch(request: Request, env: Env, ctx: WorkerContext): Promise<Response>;
  /** Cron Triggers: one pass of the refresh sweep and the purge outbox, kept alive by `waitUntil`. */
  scheduled(controller: unknown, env: Env, ctx: WorkerContext): Promise<void>;
  /** The kit of this isolate (built on first use). */
  kit(env: Env): Promise<WorkersStoreAppKit>;
}

/**
 * A Worker serving the kit's routes (install, callback, session token,
 * webhooks, health) and then the app's: the kit is built on the first request
 * of an isolate and kept for the next ones (a failed start is not kept, so the
 * next request tries again). The client's address is `cf-connecting-ip`.
 */
export function createWorker<Env extends WorkerEnv>(setup: WorkerSetup<Env>): StoreAppWorker<Env> {
  let kit: Promise<WorkersStoreAppKit> | undefined;
  const kitOf = (env: Env) => {
    kit ??= storeApp(setup.options(env), env).catch((err: unknown) => {
      kit = undefined;
      throw err;
    });
    return kit;
  };
  return {
    kit: kitOf,
    async scheduled(_controller, env, ctx) {
      const pass = kitOf(env).then((k) => k.runBackground());
      ctx.waitUntil(pass);
      await pass;
    },
    async fetch(request, env, ctx) {
      const k = await kitOf(env);
      const remoteAddress = request.headers.get('cf-connecting-ip') ?? undefined;
      const answered = await k.fetch(request, remoteAddress ? { remoteAddress } : {});
      if (answered) return answered;
      if (setup.fetch) return setup.fetch(request, env, ctx, k);
      return new Response('Not found', { status: 404 });
    },
  };
}
