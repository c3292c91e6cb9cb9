import { createHash, randomBytes } from 'node:crypto';
import type { Platform } from '../../src/platform/index.js';

export const REDIRECT = 'http://127.0.0.1:9/auth/callback';
export const WEBHOOK = 'http://127.0.0.1:9/webhooks';

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizeUrl(
  platform: Platform,
  params: Record<string, string | undefined>,
): string {
  const url = new URL(`${platform.authUrl}/oauth/authorize`);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

export interface Installed {
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  appId: string;
  storeId: string;
  accessToken: string;
  refreshToken: string;
  code: string;
  verifier: string;
}

/** Registers an app, creates a store, approves and exchanges: a ready installation. */
export async function install(
  platform: Platform,
  opts: {
    scopes?: string[];
    webhookUrl?: string;
    storeId?: string;
    tier?: 'community' | 'partner' | 'elite';
    rateLimit?: { perMinute?: number | null; concurrent?: number };
  } = {},
): Promise<Installed> {
  const scopes = opts.scopes ?? ['read_products', 'write_products', 'read_store_settings'];
  const app = platform.registerApp({
    name: 'Test app',
    redirectUri: REDIRECT,
    webhookUrl: opts.webhookUrl ?? WEBHOOK,
    scopes,
    ...(opts.tier ? { tier: opts.tier } : {}),
    ...(opts.rateLimit ? { rateLimit: opts.rateLimit } : {}),
  });
  const storeId = opts.storeId ?? platform.createStore({ name: 'Test store' }).storeId;
  const { verifier, challenge } = pkce();
  const callback = new URL(
    platform.approveInstall({
      storeId,
      authorizeUrl: authorizeUrl(platform, {
        client_id: app.clientId,
        redirect_uri: REDIRECT,
        scope: scopes.join(','),
        state: 'st',
        response_type: 'code',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    }),
  );
  const code = callback.searchParams.get('code')!;
  const res = await fetch(`${platform.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }),
  });
  if (res.status !== 200) throw new Error(`token exchange failed: ${res.status}`);
  const body = (await res.json()) as { access_token: string; refresh_token: string };
  return {
    ...app,
    storeId,
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    code,
    verifier,
  };
}

export async function postToken(
  platform: Platform,
  body: Record<string, string>,
  opts: { form?: boolean; basic?: [string, string] } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {
    'content-type': opts.form ? 'application/x-www-form-urlencoded' : 'application/json',
  };
  if (opts.basic) {
    const enc = (s: string) => encodeURIComponent(s);
    headers['authorization'] =
      `Basic ${Buffer.from(`${enc(opts.basic[0])}:${enc(opts.basic[1])}`).toString('base64')}`;
  }
  const res = await fetch(`${platform.authUrl}/oauth/token`, {
    method: 'POST',
    headers,
    body: opts.form ? new URLSearchParams(body).toString() : JSON.stringify(body),
  });
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json()) as Record<string, unknown>,
  };
}
