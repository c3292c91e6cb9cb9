/**
 * The merchant admin (/admin) and the developer dashboard (/dashboard):
 * server-rendered HTML, every value escaped, forms guarded by a same-origin check.
 */
import express, { type Request, type Response, type Router } from 'express';
import type { AppCredentials, AppRegistry, RegisterAppInput, RegisteredApp } from '../apps.js';
import { withQuery } from '../auth/authorize.js';
import type { TokenService } from '../auth/tokens.js';
import { PlatformError } from '../errors.js';
import { html, type SafeHtml, sendPage } from '../html.js';
import type { Tier } from '../options.js';
import { SCOPE_NAMES, SCOPES } from '../scopes.js';
import { sameOriginForms } from '../security.js';
import type { StoreDirectory } from '../stores.js';
import type { Delivery, WebhookDispatcher } from '../webhooks/index.js';
import { signLaunchToken } from './launch.js';

export interface AdminDeps {
  apps: AppRegistry;
  tokens: TokenService;
  stores: StoreDirectory;
  webhooks: WebhookDispatcher;
  origin: () => string;
  registerApp: (input: RegisterAppInput) => AppCredentials;
  uninstall: (input: { storeId: string; clientId: string }) => unknown;
}

const TIERS: readonly Tier[] = ['community', 'partner', 'elite'];

function field(body: unknown, key: string): string {
  const v = (body as Record<string, unknown> | undefined)?.[key];
  return typeof v === 'string' ? v : '';
}

function fieldList(body: unknown, key: string): string[] {
  const v = (body as Record<string, unknown> | undefined)?.[key];
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function notFoundPage(res: Response, what: string): void {
  sendPage(res, {
    status: 404,
    title: 'Not found',
    body: html`<div class="card error"><h1>Not found</h1><p>${what}</p><p><a href="/admin">Back to the admin</a></p></div>`,
  });
}

function deliveryTable(list: Delivery[]): SafeHtml {
  if (list.length === 0) return html`<p class="muted">No webhook deliveries yet.</p>`;
  return html`<table><thead><tr><th>Delivery</th><th>Topic</th><th>Store</th><th>Status</th><th>Attempts</th></tr></thead><tbody>${list
    .slice()
    .reverse()
    .map(
      (d) =>
        html`<tr><td><code>${d.id}</code></td><td>${d.topic}</td><td><code>${d.storeId}</code></td><td><span class="badge ${d.status}">${d.status}</span>${d.nextAttemptAt ? html`<br><span class="muted">next ${d.nextAttemptAt}</span>` : ''}</td><td>${d.attempts.map(
          (a) =>
            html`<div>${a.at} — ${a.status === undefined ? '' : `HTTP ${a.status}`}${a.error ?? ''} <span class="muted">(${a.durationMs} ms)</span></div>`,
        )}</td></tr>`,
    )}</tbody></table>`;
}

export function createAdminRouter(deps: AdminDeps): Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 100 });
  const sameOrigin = sameOriginForms(deps.origin);

  // ---- merchant admin ----

  router.get('/admin', function adminHome(_req, res) {
    const stores = deps.stores.list();
    sendPage(res, {
      title: 'Admin — stores',
      body: html`<h1>Stores</h1>
<div class="card">${
        stores.length === 0
          ? html`<p class="muted">No store yet. Create one below.</p>`
          : html`<table><thead><tr><th>Store</th><th>Domain</th><th>Currency</th><th>Apps</th></tr></thead><tbody>${stores.map(
              (s) =>
                html`<tr><td><a href="/admin/stores/${s.id}">${s.name}</a></td><td>${s.domain}</td><td>${s.currency}</td><td>${deps.tokens.installations({ storeId: s.id }).length}</td></tr>`,
            )}</tbody></table>`
      }</div>
<div class="card"><h2>Create a store</h2><form method="post" action="/admin/stores">
<label for="name">Name</label><input type="text" id="name" name="name" value="Dev Store" maxlength="255">
<label for="currency">Currency</label><input type="text" id="currency" name="currency" value="USD" maxlength="3">
<label><input type="checkbox" name="seed" value="1" checked> Fill with realistic sample data (products, customers, orders)</label>
<p><button type="submit">Create store</button></p></form></div>`,
    });
  });

  router.post('/admin/stores', sameOrigin, form, function createStore(req, res) {
    const name = field(req.body, 'name').trim();
    const currency = field(req.body, 'currency').trim().toUpperCase();
    const { storeId } = deps.stores.create({
      ...(name ? { name } : {}),
      ...(currency ? { currency } : {}),
      seed: field(req.body, 'seed') === '1',
    });
    res.redirect(303, `/admin/stores/${storeId}`);
  });

  router.get('/admin/stores/:storeId', function storePage(req: Request, res: Response) {
    const store = deps.stores.get(String(req.params['storeId']));
    if (!store) {
      notFoundPage(res, 'No such store.');
      return;
    }
    const installed = deps.tokens.installations({ storeId: store.id });
    const installedIds = new Set(installed.map((i) => i.appId));
    const notice = field(req.query, 'notice');
    const available = deps.apps.list().filter((a) => !installedIds.has(a.appId));
    sendPage(res, {
      title: `${store.name} — admin`,
      body: html`<h1>${store.name}</h1><p class="muted">${store.domain} · ${store.currency} · <code>${store.id}</code></p>
${notice === 'uninstalled' ? html`<div class="card notice">The app was uninstalled; its tokens are revoked and it was notified.</div>` : ''}
<div class="card"><h2>Installed apps</h2>${
        installed.length === 0
          ? html`<p class="muted">No app installed.</p>`
          : html`<table class="stack"><thead><tr><th>App</th><th>Scopes</th><th></th></tr></thead><tbody>${installed.map(
              (i) => {
                const a = deps.apps.byId(i.appId);
                if (!a) return '';
                return html`<tr><td><strong>${a.name}</strong><br><span class="muted url">${a.appUrl}</span></td><td>${i.scopes.join(', ')}</td><td class="right"><div class="actions"><a class="button" href="/admin/stores/${store.id}/apps/${a.clientId}">Open</a><form class="inline" method="get" action="/admin/stores/${store.id}/apps/${a.clientId}/uninstall"><button type="submit" class="danger">Uninstall</button></form></div></td></tr>`;
              },
            )}</tbody></table>`
      }</div>
<div class="card"><h2>Available apps</h2>${
        available.length === 0
          ? html`<p class="muted">Every registered app is installed. Register more in the <a href="/dashboard">developer dashboard</a>.</p>`
          : html`<table class="stack"><tbody>${available.map(
              (a) =>
                html`<tr><td><strong>${a.name}</strong><br><span class="muted">${a.scopes.join(', ')}</span></td><td class="right"><a class="button" href="/admin/stores/${store.id}/apps/${a.clientId}/install">Install</a></td></tr>`,
            )}</tbody></table>`
      }</div><p><a href="/admin">← All stores</a></p>`,
    });
  });

  function storeAndApp(
    req: Request,
    res: Response,
  ): { storeId: string; app: RegisteredApp } | undefined {
    const store = deps.stores.get(String(req.params['storeId']));
    const app = deps.apps.byClientId(String(req.params['clientId']));
    if (!store || !app) {
      notFoundPage(res, 'No such store or app.');
      return undefined;
    }
    return { storeId: store.id, app };
  }

  router.get('/admin/stores/:storeId/apps/:clientId/install', function install(req, res) {
    const found = storeAndApp(req, res);
    if (!found) return;
    // Top-level navigation: the app starts its OAuth flow from here.
    res.redirect(
      302,
      withQuery(`${found.app.appUrl.replace(/\/+$/, '')}/auth`, { store_id: found.storeId }),
    );
  });

  router.get('/admin/stores/:storeId/apps/:clientId', async function openApp(req, res) {
    const found = storeAndApp(req, res);
    if (!found) return;
    const { app, storeId } = found;
    if (!deps.tokens.isInstalled(app.appId, storeId)) {
      notFoundPage(res, `${app.name} is not installed in this store.`);
      return;
    }
    const launch = await signLaunchToken({
      issuer: deps.origin(),
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      storeId,
    });
    const src = withQuery(app.appUrl, { store_id: storeId, embedded: '1', launch });
    sendPage(res, {
      title: `${app.name} — admin`,
      wide: true,
      frameSrc: new URL(app.appUrl).origin,
      body: html`<div class="bar"><a href="/admin/stores/${storeId}">← Store</a><strong>${app.name}</strong></div><iframe class="app" title="${app.name}" src="${src}"></iframe>`,
    });
  });

  // Uninstalling deletes the merchant's data in the app: as a real admin does, the button
  // opens this page, and only its explicit confirmation (confirm=yes) uninstalls.
  router.get(
    '/admin/stores/:storeId/apps/:clientId/uninstall',
    function confirmUninstall(req, res) {
      const found = storeAndApp(req, res);
      if (!found) return;
      const { app, storeId } = found;
      if (!deps.tokens.isInstalled(app.appId, storeId)) {
        notFoundPage(res, `${app.name} is not installed in this store.`);
        return;
      }
      const store = deps.stores.get(storeId);
      sendPage(res, {
        title: `Uninstall ${app.name}?`,
        body: html`<div class="card"><h1>Uninstall ${app.name} from ${store?.name ?? storeId}?</h1>
<p>The app loses its access to this store at once: its tokens are revoked and it is sent an <code>app.uninstalled</code> event, on which it deletes everything it holds for the store (notes, settings, its copy of your data). This cannot be undone; installing the app again starts from nothing.</p>
<form method="post" action="/admin/stores/${storeId}/apps/${app.clientId}/uninstall"><input type="hidden" name="confirm" value="yes"><div class="actions"><button type="submit" class="danger">Yes, uninstall ${app.name}</button><a class="button" href="/admin/stores/${storeId}">Cancel</a></div></form></div>`,
      });
    },
  );

  router.post(
    '/admin/stores/:storeId/apps/:clientId/uninstall',
    sameOrigin,
    form,
    function uninstallApp(req, res) {
      const found = storeAndApp(req, res);
      if (!found) return;
      if (field(req.body, 'confirm') !== 'yes') {
        // Not confirmed (an old one-click form, a stray post): ask, delete nothing.
        res.redirect(303, `/admin/stores/${found.storeId}/apps/${found.app.clientId}/uninstall`);
        return;
      }
      try {
        deps.uninstall({ storeId: found.storeId, clientId: found.app.clientId });
      } catch (err) {
        if (err instanceof PlatformError) {
          notFoundPage(res, `${found.app.name} is not installed in this store.`);
          return;
        }
        throw err;
      }
      res.redirect(303, `/admin/stores/${found.storeId}?notice=uninstalled`);
    },
  );

  // ---- developer dashboard ----

  function dashboardPage(
    res: Response,
    opts: { status?: number; error?: string; values?: Record<string, unknown> } = {},
  ): void {
    const v = opts.values ?? {};
    const checked = new Set(fieldList(v, 'scopes'));
    const tier = field(v, 'tier') || 'community';
    const apps = deps.apps.list();
    sendPage(res, {
      status: opts.status ?? 200,
      title: 'Developer dashboard',
      body: html`<h1>Developer dashboard</h1>
<div class="card"><h2>Your apps</h2>${
        apps.length === 0
          ? html`<p class="muted">No app registered yet.</p>`
          : html`<table><thead><tr><th>App</th><th>Client ID</th><th>Tier</th><th>Installs</th></tr></thead><tbody>${apps.map(
              (a) =>
                html`<tr><td><a href="/dashboard/apps/${a.clientId}">${a.name}</a></td><td><code>${a.clientId}</code></td><td>${a.tier}</td><td>${deps.tokens.installations({ appId: a.appId }).length}</td></tr>`,
            )}</tbody></table>`
      }</div>
<div class="card"><h2>Register an app</h2>${opts.error ? html`<div class="card error">${opts.error}</div>` : ''}
<form method="post" action="/dashboard/apps">
<label for="name">App name</label><input type="text" id="name" name="name" required maxlength="255" value="${field(v, 'name')}">
<label for="redirectUri">Redirect URI</label><input type="url" id="redirectUri" name="redirectUri" required placeholder="https://my-app.example/auth/callback" value="${field(v, 'redirectUri')}">
<label for="webhookUrl">Webhook URL</label><input type="url" id="webhookUrl" name="webhookUrl" required placeholder="https://my-app.example/webhooks" value="${field(v, 'webhookUrl')}">
<label for="appUrl">App URL <span class="muted">(optional; defaults to the redirect URI's origin)</span></label><input type="url" id="appUrl" name="appUrl" value="${field(v, 'appUrl')}">
<p class="muted">HTTPS required; plain http only for 127.0.0.1, ::1 and localhost.</p>
<label>Scopes</label><div class="scopes">${SCOPE_NAMES.map(
        (s) =>
          html`<label title="${SCOPES[s]}"><input type="checkbox" name="scopes" value="${s}"${checked.has(s) ? html` checked` : ''}> ${s}</label>`,
      )}</div>
<label for="tier">Tier</label><select id="tier" name="tier">${TIERS.map(
        (t) => html`<option value="${t}"${t === tier ? html` selected` : ''}>${t}</option>`,
      )}</select>
<p><button type="submit">Register app</button></p></form></div>`,
    });
  }

  router.get('/dashboard', function dashboard(_req, res) {
    dashboardPage(res);
  });

  router.post('/dashboard/apps', sameOrigin, form, function registerApp(req, res) {
    const appUrl = field(req.body, 'appUrl').trim();
    const tier = field(req.body, 'tier') || 'community';
    try {
      const created = deps.registerApp({
        name: field(req.body, 'name'),
        redirectUri: field(req.body, 'redirectUri').trim(),
        webhookUrl: field(req.body, 'webhookUrl').trim(),
        scopes: fieldList(req.body, 'scopes'),
        tier: tier as Tier,
        ...(appUrl ? { appUrl } : {}),
      });
      res.redirect(303, `/dashboard/apps/${created.clientId}?created=1`);
    } catch (err) {
      if (err instanceof PlatformError) {
        dashboardPage(res, {
          status: 400,
          error: err.message.replace(/^registerApp: /, ''),
          values: req.body,
        });
        return;
      }
      throw err;
    }
  });

  router.get('/dashboard/apps/:clientId', function appPage(req, res) {
    const app = deps.apps.byClientId(String(req.params['clientId']));
    if (!app) {
      notFoundPage(res, 'No such app.');
      return;
    }
    const installs = deps.tokens.installations({ appId: app.appId });
    sendPage(res, {
      title: `${app.name} — developer dashboard`,
      body: html`<h1>${app.name}</h1>
${field(req.query, 'created') === '1' ? html`<div class="card notice">App registered. Put these credentials in your app's environment; keep the secrets out of version control.</div>` : ''}
<div class="card"><h2>Credentials</h2><table><tbody>
<tr><th>Client ID</th><td><code>${app.clientId}</code></td></tr>
<tr><th>Client secret</th><td><span class="secret">${app.clientSecret}</span></td></tr>
<tr><th>Webhook signing secret</th><td><span class="secret">${app.webhookSecret}</span></td></tr>
</tbody></table></div>
<div class="card"><h2>Settings</h2><table><tbody>
<tr><th>Redirect URI</th><td><code>${app.redirectUri}</code></td></tr>
<tr><th>Webhook URL</th><td><code>${app.webhookUrl}</code></td></tr>
<tr><th>App URL</th><td><code>${app.appUrl}</code></td></tr>
<tr><th>Scopes</th><td>${app.scopes.join(', ')}</td></tr>
<tr><th>Tier</th><td>${app.tier}</td></tr>
<tr><th>Authorize URL</th><td><code>${deps.origin()}/oauth/authorize</code></td></tr>
<tr><th>Token URL</th><td><code>${deps.origin()}/oauth/token</code></td></tr>
<tr><th>API base URL</th><td><code>${deps.origin()}/api/v1</code></td></tr>
</tbody></table></div>
<div class="card"><h2>Installed in</h2>${
        installs.length === 0
          ? html`<p class="muted">Not installed in any store. Install it from a store page in the <a href="/admin">admin</a>.</p>`
          : html`<ul>${installs.map((i) => html`<li><a href="/admin/stores/${i.storeId}">${deps.stores.get(i.storeId)?.name ?? i.storeId}</a></li>`)}</ul>`
      }</div>
<div class="card"><h2>Webhook deliveries</h2>${deliveryTable(deps.webhooks.list({ clientId: app.clientId }))}</div>
<p><a href="/dashboard">← All apps</a></p>`,
    });
  });

  return router;
}
