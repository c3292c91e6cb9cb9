/**
 * `npm run dev`: the local Merchant Store Platform and this app in one process
 * (src/dev-loop.ts), restarted by `tsx watch` when a source file changes.
 */
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { createApp } from './app.js';
import { runDev } from './dev-loop.js';

await runDev(async (options) => {
  const { app, close } = await createApp(options);
  return { server: createAdaptorServer({ fetch: app.fetch }) as Server, close };
});
