/**
 * `GET {auth.path}/browser.js`: the kit's browser module (`store-app-kit/browser`)
 * for a page that loads it as a plain `<script type="module">`, from the app's
 * own origin (so `script-src 'self'` allows it) and always the version of the
 * kit the server runs (its renewal route and headers match). Bundled pages
 * (Vite) import `store-app-kit/browser` instead.
 *
 * Read from the installed package on first request, not at import, so a
 * runtime without a file system loads the kit all the same (it answers 404).
 */
import { type CoreHandler, type CoreResponse, respond } from './http.js';

/** The module's path under `auth.path`. */
export const BROWSER_MODULE_PATH = '/browser.js';

interface Loaded {
  body: string;
  etag: string;
}

async function load(): Promise<Loaded | null> {
  try {
    // Read from the package's files; a runtime without a file system (Workers) has none to serve.
    const fs = (
      globalThis as {
        process?: { getBuiltinModule?: (id: string) => typeof import('node:fs/promises') };
      }
    ).process?.getBuiltinModule?.('node:fs/promises');
    if (!fs) return null;
    const body = await fs.readFile(new URL('../browser/index.js', import.meta.url), 'utf8');
    // Web Crypto (global on Node 20, Bun, Deno and Workers): the core imports nothing of Node.
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body));
    const b64 = btoa(String.fromCharCode(...new Uint8Array(digest).subarray(0, 16)));
    const etag = `"${b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}"`;
    return { body, etag };
  } catch {
    return null;
  }
}

/** The route's core handler: the module with an ETag, revalidated on each load (no-cache). */
export function createBrowserModuleRoute(): CoreHandler {
  let loaded: Promise<Loaded | null> | undefined;
  return async function browserModuleRoute(req): Promise<CoreResponse> {
    loaded ??= load();
    const module = await loaded;
    if (!module) {
      return respond.json(404, {
        code: 'NOT_FOUND',
        message:
          'The browser module is not readable on this runtime; bundle store-app-kit/browser with your page.',
      });
    }
    // An upgraded kit is picked up on the next page load; an unchanged one costs a 304.
    const headers = {
      etag: module.etag,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    };
    if (req.header('if-none-match') === module.etag) return respond.empty(304, headers);
    return {
      status: 200,
      headers: { ...headers, 'content-type': 'text/javascript; charset=utf-8' },
      cookies: [],
      body: { kind: 'text', value: module.body },
    };
  };
}
