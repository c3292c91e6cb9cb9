import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'vite';
import type { Frontend } from './frontend.js';

/** Vite writes this where a script or style needs the response's nonce; the server replaces it. */
const NONCE = 'STORE_APP_CSP_NONCE';

/**
 * `npm run dev`: Vite's dev server inside this app's server (middleware mode), so
 * the page, its modules and the hot-reload socket share the app's origin and port.
 * Its injected scripts and styles (React Refresh, CSS) carry a per-response nonce;
 * the production build needs none.
 */
export async function viteFrontend(
  server: Server,
  appUrl: URL,
): Promise<Frontend & { close(): Promise<void> }> {
  const vite = await createServer({
    server: { middlewareMode: true, hmr: { server } },
    appType: 'custom',
    html: { cspNonce: NONCE },
  });
  return {
    async page(url, nonce) {
      const source = await readFile(new URL('../web/index.html', import.meta.url), 'utf8');
      return (await vite.transformIndexHtml(url, source)).replaceAll(NONCE, nonce);
    },
    assets: vite.middlewares,
    // The hot-reload socket, on the app's own host and port.
    csp: { nonce: true, connect: [`ws://${appUrl.host}`] },
    close: () => vite.close(),
  };
}
