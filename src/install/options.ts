/**
 * Options of the install routes (`options.auth`): where they mount and the
 * hooks the app runs around storing an installation.
 */
import * as v from 'valibot';
import { cookieName, fn, integer, urlPath } from '../options/index.js';
import type { Installation } from '../storage/types.js';

export interface InstallHookContext {
  storeId: string;
  /** Scopes the merchant granted. */
  scopes: string[];
  /**
   * Scopes the app asked for and the merchant did not grant (only ever
   * non-empty with `auth.narrowerScopes: 'record'`).
   */
  missingScopes: string[];
}

export interface AfterInstallContext extends InstallHookContext {
  /** The stored installation (tokens decrypted; do not log them). */
  installation: Installation;
  /** True when the store was already installed (tokens and scopes replaced in place). */
  reinstall: boolean;
}

export type BeforeInstallHook = (ctx: InstallHookContext) => void | Promise<void>;
export type AfterInstallHook = (ctx: AfterInstallContext) => void | Promise<void>;

export const authRouteOptionsSchema = v.strictObject({
  /**
   * Path of the install begin route (`GET {path}?store_id=…`), relative to where
   * `kit.middleware()` is mounted.
   * @default '/auth'
   */
  path: v.optional(urlPath(), '/auth'),
  /**
   * Path of the OAuth callback. `{appUrl}{callbackPath}` is the redirect URI to
   * register in the developer dashboard.
   * @default '/auth/callback'
   */
  callbackPath: v.optional(urlPath(), '/auth/callback'),
  /**
   * How long a begun install may take before its state expires, in seconds.
   * @default 600
   */
  stateTtlSeconds: v.optional(integer(30), 600),
  /**
   * Name of the short-lived cookie binding a pending install to the browser.
   * @default 'store_app_oauth'
   */
  bindingCookieName: v.optional(cookieName(), 'store_app_oauth'),
  /**
   * Runs after the token exchange and before the installation is stored. A throw
   * aborts the install: nothing is stored, the merchant sees a 500 page, the
   * error is logged.
   * @default undefined
   */
  beforeInstall: v.optional(fn<BeforeInstallHook>('must be a function.')),
  /**
   * Runs after the installation is stored and the session started (e.g. seed
   * the app's tables). A throw is logged and shows a 500 page; the installation
   * is kept (the merchant can retry; the hook should be idempotent).
   * @default undefined
   */
  afterInstall: v.optional(fn<AfterInstallHook>('must be a function.')),
  /**
   * What to do when the platform grants fewer scopes than `oauth.scopes`.
   * `'refuse'`: nothing is stored; the merchant sees a 403 page
   * (`INSTALL_SCOPES_NOT_GRANTED`) asking to approve every permission.
   * `'record'`: the installation is stored with the scopes actually granted,
   * a warning is logged, the hooks get `missingScopes`, and
   * `res.locals.store.missingScopes` lists them on every route (the app
   * works with less; calls needing a missing scope fail with
   * `InsufficientScopeError`).
   * @default 'refuse'
   */
  narrowerScopes: v.optional(
    v.picklist(['refuse', 'record'], "must be 'refuse' or 'record'."),
    'refuse',
  ),
  /**
   * Install callbacks one client address (`req.ip`; an IPv6 /64) may bring to
   * the state and code claims and the token exchange per minute; past it the
   * callback answers 429 with `Retry-After`, before any row is written or the
   * platform is called. Behind a proxy set Express's `trust proxy`, or every
   * merchant shares the proxy's address.
   * @default 20
   */
  maxCallbacksPerSourcePerMinute: v.optional(integer(1, 10_000), 20),
  /**
   * Token exchanges (with their claims) in flight at once in this process;
   * past it the callback answers 429 with `Retry-After: 1`.
   * @default 16
   */
  maxExchangesInFlight: v.optional(integer(1, 10_000), 16),
});

/** Install routes and hooks (`options.auth`). */
export type AuthRouteOptions = v.InferInput<typeof authRouteOptionsSchema>;

export interface ResolvedAuthRouteOptions {
  path: string;
  callbackPath: string;
  /** `{appUrl}{callbackPath}`: the registered redirect URI. */
  redirectUri: string;
  /** Absolute URL of the begin route, for links and the iframe breakout. */
  beginUrl: string;
  stateTtlSeconds: number;
  bindingCookieName: string;
  beforeInstall: BeforeInstallHook | undefined;
  afterInstall: AfterInstallHook | undefined;
  narrowerScopes: 'refuse' | 'record';
  maxCallbacksPerSourcePerMinute: number;
  maxExchangesInFlight: number;
}
