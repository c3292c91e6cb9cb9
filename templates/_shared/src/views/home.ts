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
  /** The store's name from the platform; null shows the id instead. */
  storeName: string | null;
  sessionToken: string;
  nonce: string;
}

const STYLE = `
  :root { color-scheme: light; font-family: system-ui, -apple-system, Segoe UI, sans-serif; }
  * { box-sizing: border-box; }
  body { margin: 0; padding: 24px; background: #f6f6f7; color: #202223; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 16px; margin: 0; }
  .muted { color: #616a75; font-size: 13px; }
  .store { overflow-wrap: anywhere; }
  .card { background: #fff; border-radius: 10px; box-shadow: 0 1px 2px rgba(0,0,0,.08); padding: 16px; margin-top: 16px; }
  .card-head { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: 4px 12px; margin-bottom: 12px; }
  table { width: 100%; border-collapse: collapse; font-size: 14px; }
  th, td { text-align: left; padding: 8px 6px; border-bottom: 1px solid #eceeef; vertical-align: middle; overflow-wrap: anywhere; }
  th { font-weight: 600; color: #616a75; font-size: 12px; text-transform: uppercase; }
  .note-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
  .note-controls input { flex: 1 1 12em; min-width: 0; }
  input[type=text] { width: 100%; padding: 6px 8px; border: 1px solid #8c9196; border-radius: 6px; font: inherit; }
  button { white-space: nowrap; padding: 6px 10px; border: 1px solid #8c9196; border-radius: 6px; background: #fff; color: #202223; cursor: pointer; font: inherit; font-size: 13px; }
  button.primary { background: #008060; border-color: #008060; color: #fff; }
  button:disabled { opacity: .55; cursor: default; }
  button:focus-visible, input:focus-visible { outline: 2px solid #2c6ecb; outline-offset: 1px; }
  .row-status { flex-basis: 100%; min-height: 18px; font-size: 12px; color: #616a75; }
  .row-status:empty { min-height: 0; }
  .row-status.pending { color: #8a6116; }
  .row-status.ok { color: #007a5a; font-weight: 600; }
  .row-status.error { color: #d72c0d; font-weight: 600; }
  .pager { display: flex; align-items: center; justify-content: flex-end; gap: 8px; margin-top: 12px; }
  #status { min-height: 18px; margin-top: 8px; }
  .error { color: #d72c0d; }
  @media (max-width: 640px) {
    body { padding: 12px; }
    .card { padding: 12px; }
    /* Each row becomes a small card; the column names move beside the values. */
    table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
    table.stack tr { padding: 8px 0; border-bottom: 1px solid #eceeef; }
    table.stack td { border: 0; padding: 3px 0; }
    table.stack td[data-label]::before { content: attr(data-label) ": "; color: #616a75; font-size: 12px; }
    table.stack td.row-title { font-weight: 600; }
    .note-controls input { flex-basis: 100%; }
    .pager { justify-content: space-between; }
  }
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

  function cell(row, text, label) {
    const td = document.createElement('td'); td.textContent = text;
    if (label) td.dataset.label = label;
    row.appendChild(td); return td;
  }
  const money = (n, cur) => (typeof n === 'number' ? n.toFixed(2) : '') + (cur ? ' ' + cur : '');
  const clock = () => new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

  let notes = {};
  // cursors[i] opens page i; the platform gives the next one with each page.
  const cursors = [null];
  let pageIndex = 0;

  function renderProducts(products) {
    const body = document.getElementById('products');
    body.replaceChildren();
    if (products.length === 0) { const r = body.insertRow(); cell(r, 'No products yet.').colSpan = 4; return; }
    for (const p of products) {
      const row = body.insertRow();
      row.dataset.productId = p.id;
      cell(row, p.name).className = 'product-name row-title';
      cell(row, money(p.price, p.currency), 'Price');
      const stock = cell(row, String(p.inventoryQuantity ?? 0), 'Stock');
      stock.className = 'stock';
      const noteCell = document.createElement('td');
      noteCell.className = 'note';
      const input = document.createElement('input');
      input.type = 'text'; input.maxLength = 1000; input.placeholder = 'Add a note'; input.value = notes[p.id] || '';
      input.setAttribute('aria-label', 'Note for ' + p.name);
      const rowStatus = document.createElement('span');
      rowStatus.className = 'row-status';
      rowStatus.setAttribute('role', 'status');
      const show = (text, kind) => { rowStatus.textContent = text; rowStatus.className = 'row-status' + (kind ? ' ' + kind : ''); };
      const save = document.createElement('button');
      save.type = 'button'; save.textContent = 'Save note'; save.className = 'primary save-note';
      async function saveNote() {
        save.disabled = true; show('Saving…', 'pending');
        try {
          await api('/api/products/' + encodeURIComponent(p.id) + '/note', { method: 'PUT', body: JSON.stringify({ note: input.value }) });
          notes[p.id] = input.value;
          show((input.value.trim() === '' ? 'Note removed' : 'Saved') + ' at ' + clock(), 'ok');
          say('Note saved for ' + p.name);
        } catch (e) { show('Not saved: ' + e.message, 'error'); say(e.message, true); }
        finally { save.disabled = false; }
      }
      save.addEventListener('click', saveNote);
      input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); saveNote(); } });
      input.addEventListener('input', () => show(input.value === (notes[p.id] || '') ? '' : 'Unsaved changes', 'pending'));
      const plus = document.createElement('button');
      plus.type = 'button'; plus.textContent = '+1 stock'; plus.className = 'add-stock';
      plus.setAttribute('aria-label', 'Add one to the stock of ' + p.name);
      plus.addEventListener('click', async () => {
        plus.disabled = true; show('Updating stock…', 'pending');
        try {
          const r = await api('/api/inventory', { method: 'POST', body: JSON.stringify({ productId: p.id, increment: 1 }) });
          stock.textContent = String(r.inventoryQuantity);
          show('Stock updated at ' + clock(), 'ok');
          say('Stock updated for ' + p.name);
        } catch (e) { show('Stock not updated: ' + e.message, 'error'); say(e.message, true); }
        finally { plus.disabled = false; }
      });
      const wrap = document.createElement('div');
      wrap.className = 'note-controls';
      wrap.append(input, save, plus, rowStatus);
      noteCell.appendChild(wrap);
      row.appendChild(noteCell);
    }
  }

  const prev = document.getElementById('prev-page');
  const next = document.getElementById('next-page');
  const pageLabel = document.getElementById('page-label');
  async function loadPage(index) {
    prev.disabled = true; next.disabled = true;
    const cursor = cursors[index];
    const page = await api('/api/products' + (cursor ? '?cursor=' + encodeURIComponent(cursor) : ''));
    pageIndex = index;
    if (page.nextCursor) cursors[index + 1] = page.nextCursor; else cursors.length = index + 1;
    renderProducts(page.data);
    const pages = Math.max(1, Math.ceil((page.total || 0) / page.perPage));
    pageLabel.textContent = 'Page ' + (index + 1) + ' of ' + pages;
    const first = index * page.perPage + 1;
    document.getElementById('product-count').textContent = page.data.length === 0 ? '' :
      first + '–' + (first + page.data.length - 1) + ' of ' + page.total;
    prev.disabled = index === 0;
    next.disabled = !page.nextCursor;
    document.body.dataset.page = String(index + 1);
  }
  async function turn(index) {
    try { await loadPage(index); say(''); document.getElementById('products-heading').scrollIntoView({ block: 'nearest' }); }
    catch (e) { prev.disabled = pageIndex === 0; next.disabled = !cursors[pageIndex + 1]; say(e.message, true); }
  }
  prev.addEventListener('click', () => turn(pageIndex - 1));
  next.addEventListener('click', () => turn(pageIndex + 1));

  function renderOrders(orders) {
    const body = document.getElementById('orders');
    body.replaceChildren();
    if (orders.length === 0) { const r = body.insertRow(); cell(r, 'No orders yet.').colSpan = 4; return; }
    for (const o of orders) {
      const row = body.insertRow();
      cell(row, o.orderNumber).className = 'order-number row-title';
      cell(row, o.customerEmail || '', 'Customer'); cell(row, money(o.total, o.currency), 'Total'); cell(row, o.status, 'Status');
    }
  }

  (async () => {
    try {
      const loadedNotes = await api('/api/notes');
      notes = Object.fromEntries(loadedNotes.data.map((n) => [n.productId, n.note]));
      const [, orders] = await Promise.all([loadPage(0), api('/api/orders')]);
      renderOrders(orders.data);
      document.body.dataset.loaded = 'true';
      say('');
    } catch (e) { say(e.message, true); }
  })();
})();
`;

export function renderHomePage({ storeId, storeName, sessionToken, nonce }: HomePageInput): string {
  const store = storeName
    ? `<strong id="store-name">${escapeHtml(storeName)}</strong>`
    : `<code id="store-name">${escapeHtml(storeId)}</code>`;
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
<header>
<h1>My store app</h1>
<div class="muted store">Store: ${store}</div>
<div id="status" class="muted" role="status">Loading…</div>
</header>
<main>
<section class="card" aria-labelledby="products-heading">
  <div class="card-head"><h2 id="products-heading">Products</h2><span id="product-count" class="muted"></span></div>
  <table class="stack">
    <thead><tr><th>Name</th><th>Price</th><th>Stock</th><th>Note</th></tr></thead>
    <tbody id="products"></tbody>
  </table>
  <nav class="pager" aria-label="Product pages">
    <button type="button" id="prev-page" disabled>Previous</button>
    <span id="page-label" class="muted"></span>
    <button type="button" id="next-page" disabled>Next</button>
  </nav>
</section>
<section class="card" aria-labelledby="orders-heading">
  <div class="card-head"><h2 id="orders-heading">Recent orders</h2></div>
  <table class="stack">
    <thead><tr><th>Order</th><th>Customer</th><th>Total</th><th>Status</th></tr></thead>
    <tbody id="orders"></tbody>
  </table>
</section>
</main>
<script nonce="${escapeHtml(nonce)}">${SCRIPT}</script>
</body>
</html>`;
}
