import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler } from 'express';

/**
 * The React UI as the server sees it: the page the admin frames (index.html,
 * into which the server writes the app session token) and the files it loads.
 * Production serves Vite's build (`dist/client`); `npm run dev` serves Vite's
 * dev server instead (src/dev-frontend.ts), with hot reload.
 */
export interface Frontend {
  /** index.html for this request; `nonce` goes where the page needs one (dev only). */
  page(url: string, nonce: string): Promise<string>;
  /** Serves the UI's files (never index.html at `/`: the page goes through the kit). */
  assets: RequestHandler;
  /** Content Security Policy sources the UI needs beyond 'self' (dev: Vite's HMR). */
  csp?: { nonce: boolean; connect: string[] };
}

/** Where `vite build` writes the UI, next to the compiled server (dist/client). */
export const BUILT_UI = fileURLToPath(new URL('./client/', import.meta.url));

/** Vite's production build, read once. */
export function builtFrontend(dir = BUILT_UI): Frontend {
  let html: string | undefined;
  return {
    async page() {
      html ??= readFileSync(`${dir}/index.html`, 'utf8');
      return html;
    },
    // Hashed file names: cached for a year; index.html itself is never served from here.
    assets: express.static(dir, { index: false, immutable: true, maxAge: '1y' }),
  };
}

/** Fails at start, naming the fix, when the UI was never built. */
export function assertBuilt(dir = BUILT_UI): void {
  if (!existsSync(`${dir}/index.html`)) {
    throw new Error(`The UI is not built (${dir}index.html is missing): run \`npm run build\`.`);
  }
}
