/**
 * The embedded home page: server-rendered HTML plus one small inline script
 * (allowed by a per-request CSP nonce), so there is no frontend build step.
 * The script talks to this app's own JSON routes with the app session token;
 * it never sees a platform access token.
 */

const escapes: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

export interface HomePageInput {
  storeId: string;
  sessionToken: string;
  nonce: string;
}

const STYLE = `
  :root { color-scheme: light; font-family: system-ui, -apple-system, Segoe UI, sans-serif; }
  body { margin: 0; padding: 24px; background: #f6f6f7; color: #202223; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 16px; margin: 0 0 12px; }
  .muted { color: #6d7175; font-size: 13px; }
  .card { background: #fff; border-radius: 10px; box-shadow: 0 1px 2px rgba(0,0,0,.08); padding: 16px; margin-top: 16px; }
  table { width: 100%; border-collapse: collapse; font-size: 14px; }
  th, td { text-align: left; padding: 8px 6px; border-bottom: 1px solid #eceeef; vertical-align: middle; }
  th { font-weight: 600; color: #6d7175; font-size: 12px; text-transform: uppercase; }
  input[type=text] { width: 100%; box-sizing: border-box; padding: 6px 8px; border: 1px solid #c9cccf; border-radius: 6px; }
  button { white-space: nowrap; padding: 6px 10px; border: 1px solid #c9cccf; border-radius: 6px; background: #fff; cursor: pointer; }
  button.primary { background: #008060; border-color: #008060; color: #fff; }
  #status { min-height: 18px; margin-top: 8px; }
  .error { color: #d72c0d; }
`;

// Runs in the browser. Builds DOM with textContent only: product names and
// notes come from merchants and must never be parsed as HTML.
const SCRIPT = `
(() => {
  const meta = document.querySelector('meta[name="store-app-session-token"]');
  let token = meta.content;
  const status = document.getElementById('status');
  const say = (text, isError) => { status.textContent = text; status.className = isError ? 'muted error' : 'muted'; };

  async function api(path, init = {}) {
    const res = await fetch(path, {
      ...init,
      headers: { ...(init.headers || {}), Authorization: 'Bearer ' + token, Accept: 'application/json',
        ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
    });
    const reauth = res.headers.get('X-Store-App-Reauthorize');
    if (res.status === 401 && reauth) { window.top.location.href = reauth; throw new Error('reauthorizing'); }
    const body = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) throw new Error((body && body.message) || ('HTTP ' + res.status));
    return body;
  }

  // App session tokens are short-lived: swap for a fresh one well before expiry.
  setInterval(async () => {
    try { token = (await api('/api/session-token')).token; } catch (e) { say('Session expired; reload the page.', true); }
  }, 4 * 60 * 1000);

  function cell(row, text) { const td = document.createElement('td'); td.textContent = text; row.appendChild(td); return td; }
  const money = (n, cur) => (typeof n === 'number' ? n.toFixed(2) : '') + (cur ? ' ' + cur : '');

  function renderProducts(products, notes) {
    const body = document.getElementById('products');
    body.replaceChildren();
    if (products.length === 0) { const r = body.insertRow(); cell(r, 'No products yet.').colSpan = 4; return; }
    for (const p of products) {
      const row = body.insertRow();
      row.dataset.productId = p.id;
      cell(row, p.name).className = 'product-name';
      cell(row, money(p.price, p.currency));
      const stock = cell(row, String(p.inventoryQuantity ?? 0));
      stock.className = 'stock';
      const noteCell = document.createElement('td');
      const input = document.createElement('input');
      input.type = 'text'; input.maxLength = 1000; input.placeholder = 'Add a note'; input.value = notes[p.id] || '';
      input.setAttribute('aria-label', 'Note for ' + p.name);
      const save = document.createElement('button');
      save.textContent = 'Save note'; save.className = 'primary save-note';
      save.addEventListener('click', async () => {
        try {
          await api('/api/products/' + encodeURIComponent(p.id) + '/note', { method: 'PUT', body: JSON.stringify({ note: input.value }) });
          say('Note saved for ' + p.name);
        } catch (e) { say(e.message, true); }
      });
      const plus = document.createElement('button');
      plus.textContent = '+1 stock'; plus.className = 'add-stock';
      plus.addEventListener('click', async () => {
        try {
          const r = await api('/api/inventory', { method: 'POST', body: JSON.stringify({ productId: p.id, increment: 1 }) });
          stock.textContent = String(r.inventoryQuantity);
          say('Stock updated for ' + p.name);
        } catch (e) { say(e.message, true); }
      });
      const wrap = document.createElement('div');
      wrap.style.display = 'flex'; wrap.style.gap = '6px';
      wrap.append(input, save, plus);
      noteCell.appendChild(wrap);
      row.appendChild(noteCell);
    }
  }

  function renderOrders(orders) {
    const body = document.getElementById('orders');
    body.replaceChildren();
    if (orders.length === 0) { const r = body.insertRow(); cell(r, 'No orders yet.').colSpan = 4; return; }
    for (const o of orders) {
      const row = body.insertRow();
      cell(row, o.orderNumber); cell(row, o.customerEmail || ''); cell(row, money(o.total, o.currency)); cell(row, o.status);
    }
  }

  (async () => {
    try {
      const [products, orders, notes] = await Promise.all([api('/api/products'), api('/api/orders'), api('/api/notes')]);
      const byProduct = Object.fromEntries(notes.data.map((n) => [n.productId, n.note]));
      renderProducts(products.data, byProduct);
      renderOrders(orders.data);
      document.body.dataset.loaded = 'true';
      say('');
    } catch (e) { say(e.message, true); }
  })();
})();
`;

export function renderHomePage({ storeId, sessionToken, nonce }: HomePageInput): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="store-app-session-token" content="${escapeHtml(sessionToken)}">
<title>My store app</title>
<style nonce="${escapeHtml(nonce)}">${STYLE}</style>
</head>
<body>
<h1>My store app</h1>
<div class="muted">Store <code>${escapeHtml(storeId)}</code></div>
<div id="status" class="muted">Loading…</div>
<section class="card">
  <h2>Products</h2>
  <table>
    <thead><tr><th>Name</th><th>Price</th><th>Stock</th><th>Note</th></tr></thead>
    <tbody id="products"></tbody>
  </table>
</section>
<section class="card">
  <h2>Recent orders</h2>
  <table>
    <thead><tr><th>Order</th><th>Customer</th><th>Total</th><th>Status</th></tr></thead>
    <tbody id="orders"></tbody>
  </table>
</section>
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}
