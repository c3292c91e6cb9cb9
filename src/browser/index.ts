/**
 * `store-app-kit/browser`: the page inside the store admin's iframe talks to
 * its own server with the app session token the server rendered into the page
 * (`<meta name="store-app-session-token" content="…">`).
 *
 * - `fetch(input, init)` adds `Authorization: Bearer <token>`, renews the token
 *   shortly before it expires (one renewal at a time, shared by the app's tabs),
 *   retries once when the server says the token expired, and on a 401 carrying
 *   `X-Store-App-Reauthorize` sends the top window there (with a one-click
 *   fallback where the browser blocks a script navigation from the frame).
 * - `token()` for what cannot go through fetch (EventSource, WebSocket).
 *
 * The token is read, never verified (the server verifies). Its lifetime is
 * `exp − iat` counted from when the page or renewal was requested, so a wrong
 * clock on the merchant's computer cannot make it look fresh or stale.
 *
 * No dependencies, no DOM access at import: safe to import in any bundle.
 */

/** Codes of the errors this module throws; the server's codes pass through as they are. */
export type BrowserErrorCode =
  | 'SESSION_TOKEN_MISSING'
  | 'SESSION_TOKEN_INVALID'
  | 'SESSION_TOKEN_EXPIRED'
  | 'SESSION_LIFETIME_EXCEEDED'
  | 'SESSION_REQUIRED'
  | 'SCOPES_CHANGED'
  | 'REAUTHORIZATION_REQUIRED'
  | 'SESSION_RENEWAL_FAILED'
  | 'NETWORK_ERROR'
  | (string & {});

/** Every error this module throws (never a bare string); branch on `code`. */
export class StoreAppBrowserError extends Error {
  /** Stable code: the server's (`SCOPES_CHANGED`, …) or this module's (`NETWORK_ERROR`, …). */
  readonly code: BrowserErrorCode;
  /** HTTP status of the answer behind the error, if any. */
  readonly status: number | undefined;
  constructor(code: BrowserErrorCode, message: string, status?: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'StoreAppBrowserError';
    this.code = code;
    this.status = status;
  }
}

export interface SessionOptions {
  /**
   * The app session token the page was served with.
   * @default the content of `<meta name="store-app-session-token">`
   */
  token?: string;
  /**
   * Where a token is renewed: the kit's session-token route, `{auth.path}/session-token`
   * under the app's URL.
   * @default '/auth/session-token'
   */
  sessionTokenUrl?: string;
  /**
   * The header naming where to re-authorise (`authenticated.reauthorizeHeader`).
   * @default 'X-Store-App-Reauthorize'
   */
  reauthorizeHeader?: string;
  /**
   * Renew this many seconds before the token expires.
   * @default a quarter of the token's lifetime, at most 60
   */
  renewBeforeSeconds?: number;
  /**
   * Share renewed tokens with the app's other tabs of the same store
   * (BroadcastChannel, and Web Locks so that one tab renews).
   * @default true
   */
  shareAcrossTabs?: boolean;
  /**
   * Replaces the default re-authorisation: navigate the top window to `url`,
   * and show a "Continue" link over the page if the browser blocks that.
   */
  onReauthorize?: (url: string) => void;
}

/** An app session in the page: its token, kept fresh, and calls that carry it. */
export interface StoreAppSession {
  /** `fetch` with the bearer token; see the module's description. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** A token valid for a while yet (renewed first when close to expiry). */
  token(): Promise<string>;
  /** The store the token is for (its `sub`). */
  readonly storeId: string;
  /** Stops the renewal timer and leaves the tabs' channel. */
  close(): void;
}

const META = 'meta[name="store-app-session-token"]';
const EXPIRED = 'SESSION_TOKEN_EXPIRED';
/** Wait before showing the fallback when the browser neither navigates nor throws. */
const FALLBACK_AFTER_MS = 1500;

const fail = (code: BrowserErrorCode, message: string, status?: number, cause?: unknown) =>
  new StoreAppBrowserError(code, message, status, cause);

/** The claims we need from a JWT, unverified. */
function claims(token: string): { sub: string; life: number } {
  try {
    const part = token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/');
    const p = JSON.parse(atob(part)) as { sub?: unknown; exp?: unknown; iat?: unknown };
    if (typeof p.sub === 'string' && typeof p.exp === 'number' && typeof p.iat === 'number') {
      return { sub: p.sub, life: (p.exp - p.iat) * 1000 };
    }
  } catch {}
  throw fail('SESSION_TOKEN_INVALID', 'The app session token is not a JWT with sub, iat and exp.');
}

/** `{ code, message }` of a JSON error answer, or `{}`. */
async function errorBody(res: Response): Promise<{ code?: string; message?: string }> {
  try {
    return (await res.clone().json()) ?? {};
  } catch {
    return {};
  }
}

/**
 * Creates a session for the page. Most pages use the module's `fetch` and
 * `token`, which create one from the meta tag on first use.
 */
export function createSession(options: SessionOptions = {}): StoreAppSession {
  const given =
    options.token ?? document.querySelector<HTMLMetaElement>(META)?.getAttribute('content');
  if (!given) {
    throw fail(
      'SESSION_TOKEN_MISSING',
      'No app session token: render it into <meta name="store-app-session-token"> or pass { token }.',
    );
  }
  const url = options.sessionTokenUrl ?? '/auth/session-token';
  const header = options.reauthorizeHeader ?? 'X-Store-App-Reauthorize';
  const { sub } = claims(given);
  const channel =
    options.shareAcrossTabs !== false && typeof BroadcastChannel === 'function'
      ? new BroadcastChannel(`store-app-kit:${sub}`)
      : undefined;
  const locks = channel && typeof navigator !== 'undefined' ? navigator.locks : undefined;
  let current = given;
  /** When `current` expires, in this browser's clock (ms). */
  let until = 0;
  let renewBefore = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inflight: Promise<void> | undefined;
  let leaving = false;

  function schedule(delay: number): void {
    clearTimeout(timer);
    timer = setTimeout(() => {
      renew().catch((err: StoreAppBrowserError) => {
        // A network blip: try again soon while the token lasts (a call renews on demand too).
        if (err.code === 'NETWORK_ERROR' && Date.now() < until - 5000) schedule(5000);
      });
    }, delay);
  }

  /** Takes `token` if it outlives the current one; `sentAt`: when it was asked for. */
  function adopt(token: string, expiresAt: number): boolean {
    if (expiresAt <= until) return false;
    const { life } = claims(token);
    current = token;
    until = expiresAt;
    renewBefore = options.renewBeforeSeconds
      ? options.renewBeforeSeconds * 1000
      : Math.min(60_000, life / 4);
    // A little jitter, so the tabs' timers do not all fire together.
    schedule(until - renewBefore - Date.now() - Math.random() * (renewBefore / 4));
    return true;
  }
  // The page was requested at timeOrigin, before the token in it was minted.
  adopt(given, (performance.timeOrigin || Date.now()) + claims(given).life);

  channel?.addEventListener('message', (e: MessageEvent) => {
    const m = e.data as { token?: unknown; until?: unknown };
    if (typeof m?.token === 'string' && typeof m.until === 'number') {
      try {
        if (claims(m.token).sub === sub) adopt(m.token, m.until);
      } catch {}
    }
  });

  async function ask(bearer: boolean): Promise<void> {
    const sentAt = Date.now();
    let res: Response;
    try {
      res = await globalThis.fetch(url, {
        headers: bearer ? { Authorization: `Bearer ${current}` } : {},
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch (cause) {
      throw fail('NETWORK_ERROR', 'Could not reach the app to renew the session token.', 0, cause);
    }
    if (res.ok) {
      const { token } = (await res.json()) as { token: string };
      if (adopt(token, sentAt + claims(token).life)) {
        channel?.postMessage({ token: current, until });
      }
      return;
    }
    const body = await errorBody(res);
    // Expired by the server's clock: the browser session cookie may still renew it.
    if (bearer && res.status === 401 && body.code === EXPIRED) return ask(false);
    throw refusal(res, body, 'SESSION_RENEWAL_FAILED');
  }

  /** One renewal at a time in this tab, and (with Web Locks) across the tabs. */
  function renew(): Promise<void> {
    inflight ??= (async () => {
      const seen = until;
      const run = async () => {
        // Another tab may have renewed while we waited for the lock: its message first (one
        // task's turn, by a MessageChannel: a background tab's timers would wait a second).
        await new Promise((r) => {
          const c = new MessageChannel();
          c.port1.onmessage = r;
          c.port2.postMessage(0);
        });
        if (until === seen) await ask(Date.now() < until);
      };
      await (locks ? locks.request(`store-app-kit:${sub}`, run) : run());
    })().finally(() => {
      inflight = undefined;
    });
    return inflight;
  }

  async function token(): Promise<string> {
    if (Date.now() >= until - renewBefore) {
      try {
        await renew();
      } catch (err) {
        // Not renewed, but the token still works: use it; the timer tries again.
        if (Date.now() >= until || (err as StoreAppBrowserError).code !== 'NETWORK_ERROR')
          throw err;
      }
    }
    return current;
  }

  function refusal(res: Response, body: { code?: string; message?: string }, code: string) {
    const to = res.headers.get(header);
    if (res.status === 401 && to) reauthorize(to);
    return fail(
      body.code ?? (to ? 'REAUTHORIZATION_REQUIRED' : code),
      body.message ?? `The app answered ${res.status}.`,
      res.status,
    );
  }

  function reauthorize(to: string): void {
    if (leaving) return;
    leaving = true;
    if (options.onReauthorize) {
      options.onReauthorize(to);
      return;
    }
    const shown = setTimeout(() => fallback(to), FALLBACK_AFTER_MS);
    addEventListener('pagehide', () => clearTimeout(shown));
    try {
      (window.top ?? window).location.href = to;
    } catch {
      // Blocked: a cross-origin frame may navigate the top window only after a click.
      clearTimeout(shown);
      fallback(to);
    }
  }

  async function send(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const base = new Request(input, init);
    for (let retried = false; ; retried = true) {
      const bearer = await token();
      // The retry sends the original; the first attempt a copy, so the body can go twice.
      const req = retried ? base : base.clone();
      req.headers.set('Authorization', `Bearer ${bearer}`);
      let res: Response;
      try {
        res = await globalThis.fetch(req);
      } catch (cause) {
        if ((cause as Error)?.name === 'AbortError') throw cause;
        throw fail('NETWORK_ERROR', `Could not reach ${req.url}.`, 0, cause);
      }
      if (res.status !== 401) return res;
      const body = await errorBody(res);
      if (res.headers.get(header)) throw refusal(res, body, 'REAUTHORIZATION_REQUIRED');
      if (retried || body.code !== EXPIRED) return res;
      // Expired by the server's clock before ours said so (a laptop that slept): renew, once.
      if (until > Date.now()) until = Date.now();
      await renew();
    }
  }

  return {
    fetch: send,
    token,
    storeId: sub,
    close() {
      clearTimeout(timer);
      channel?.close();
    },
  };
}

/** The link over the page that leaves the frame on the merchant's click. */
function fallback(to: string): void {
  const box = document.createElement('div');
  box.setAttribute('role', 'alertdialog');
  box.setAttribute('aria-label', 'Continue in the store admin');
  box.dataset['storeAppReauthorize'] = '';
  box.style.cssText =
    'position:fixed;inset:0;z-index:2147483647;display:flex;align-items:center;justify-content:center;background:rgba(246,246,247,.94);font:15px system-ui,sans-serif;color:#202223';
  const card = document.createElement('div');
  card.style.cssText =
    'max-width:22em;padding:20px;border-radius:10px;background:#fff;box-shadow:0 1px 4px rgba(0,0,0,.2);text-align:center';
  const text = document.createElement('p');
  text.textContent = 'This app needs you to approve it again in the store admin.';
  const link = document.createElement('a');
  link.href = to;
  link.target = '_top';
  link.textContent = 'Continue';
  link.style.cssText =
    'display:inline-block;padding:8px 16px;border-radius:6px;background:#008060;color:#fff;text-decoration:none';
  card.append(text, link);
  box.append(card);
  document.body.append(box);
  link.focus();
}

let shared: StoreAppSession | undefined;
/** The page's session, from its meta tag, created on first use. */
function session(): StoreAppSession {
  shared ??= createSession();
  return shared;
}

/** `fetch` with the page's app session token (see the module's description). */
export async function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  return session().fetch(input, init);
}

/** The page's app session token, renewed first when close to expiry. */
export async function token(): Promise<string> {
  return session().token();
}
