import { StoreAppBrowserError, fetch as withSession } from 'store-app-kit/browser';

/**
 * A call to this app's own JSON routes with the page's app session token
 * (`store-app-kit/browser` adds it, renews it, and re-authorises when the server
 * says so). Answers the JSON body; a 4xx/5xx throws with the server's code and message.
 */
export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await withSession(path, {
    ...init,
    headers: {
      Accept: 'application/json',
      ...(init.body ? { 'Content-Type': 'application/json' } : {}),
      ...init.headers,
    },
  });
  if (res.status === 204) return null as T;
  const body = (await res.json().catch(() => null)) as { code?: string; message?: string } | null;
  if (!res.ok) {
    throw new StoreAppBrowserError(
      body?.code ?? 'HTTP_ERROR',
      body?.message ?? `HTTP ${res.status}`,
      res.status,
    );
  }
  return body as T;
}

/** What to show for a failed call: the server's message. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
