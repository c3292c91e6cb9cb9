// The embedded home page's script: a file of the app's origin (the page's Content Security
// Policy allows 'self' only: no inline script). Builds the DOM with textContent only:
// product names and notes come from merchants and must never be parsed as HTML.
//
// Its calls go through store-app-kit/browser, which the kit serves at /auth/browser.js.
import { fetch as withSession } from '/auth/browser.js';

const status = document.getElementById('status');
const say = (text, isError) => {
  status.textContent = text;
  status.className = isError ? 'muted error' : 'muted';
};

/**
 * A call to this app's JSON routes. store-app-kit/browser adds the app session token the
 * page was served with, renews it before it expires, and sends the merchant to
 * re-authorise when the server says so; a 4xx/5xx throws with the server's message.
 */
async function api(path, init = {}) {
  const res = await withSession(path, {
    ...init,
    headers: {
      Accept: 'application/json',
      ...(init.body ? { 'Content-Type': 'application/json' } : {}),
      ...init.headers,
    },
  });
  const body = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.message || `HTTP ${res.status}`);
  return body;
}

function cell(row, text, label) {
  const td = document.createElement('td');
  td.textContent = text;
  if (label) td.dataset.label = label;
  row.appendChild(td);
  return td;
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
  if (products.length === 0) {
    const r = body.insertRow();
    cell(r, 'No products yet.').colSpan = 4;
    return;
  }
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
    input.type = 'text';
    input.maxLength = 1000;
    input.placeholder = 'Add a note';
    input.value = notes[p.id] || '';
    input.setAttribute('aria-label', 'Note for ' + p.name);
    const rowStatus = document.createElement('span');
    rowStatus.className = 'row-status';
    rowStatus.setAttribute('role', 'status');
    const show = (text, kind) => {
      rowStatus.textContent = text;
      rowStatus.className = 'row-status' + (kind ? ' ' + kind : '');
    };
    const save = document.createElement('button');
    save.type = 'button';
    save.textContent = 'Save note';
    save.className = 'primary save-note';
    async function saveNote() {
      save.disabled = true;
      show('Saving…', 'pending');
      try {
        await api('/api/products/' + encodeURIComponent(p.id) + '/note', {
          method: 'PUT',
          body: JSON.stringify({ note: input.value }),
        });
        notes[p.id] = input.value;
        show((input.value.trim() === '' ? 'Note removed' : 'Saved') + ' at ' + clock(), 'ok');
        say('Note saved for ' + p.name);
      } catch (e) {
        show('Not saved: ' + e.message, 'error');
        say(e.message, true);
      } finally {
        save.disabled = false;
      }
    }
    save.addEventListener('click', saveNote);
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        saveNote();
      }
    });
    input.addEventListener('input', () =>
      show(input.value === (notes[p.id] || '') ? '' : 'Unsaved changes', 'pending'),
    );
    const plus = document.createElement('button');
    plus.type = 'button';
    plus.textContent = '+1 stock';
    plus.className = 'add-stock';
    plus.setAttribute('aria-label', 'Add one to the stock of ' + p.name);
    plus.addEventListener('click', async () => {
      plus.disabled = true;
      show('Updating stock…', 'pending');
      try {
        const r = await api('/api/inventory', {
          method: 'POST',
          body: JSON.stringify({ productId: p.id, increment: 1 }),
        });
        stock.textContent = String(r.inventoryQuantity);
        show('Stock updated at ' + clock(), 'ok');
        say('Stock updated for ' + p.name);
      } catch (e) {
        show('Stock not updated: ' + e.message, 'error');
        say(e.message, true);
      } finally {
        plus.disabled = false;
      }
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
  prev.disabled = true;
  next.disabled = true;
  const cursor = cursors[index];
  const page = await api('/api/products' + (cursor ? '?cursor=' + encodeURIComponent(cursor) : ''));
  pageIndex = index;
  if (page.nextCursor) cursors[index + 1] = page.nextCursor;
  else cursors.length = index + 1;
  renderProducts(page.data);
  const pages = Math.max(1, Math.ceil((page.total || 0) / page.perPage));
  pageLabel.textContent = 'Page ' + (index + 1) + ' of ' + pages;
  const first = index * page.perPage + 1;
  document.getElementById('product-count').textContent =
    page.data.length === 0
      ? ''
      : first + '–' + (first + page.data.length - 1) + ' of ' + page.total;
  prev.disabled = index === 0;
  next.disabled = !page.nextCursor;
  document.body.dataset.page = String(index + 1);
}
async function turn(index) {
  try {
    await loadPage(index);
    say('');
    document.getElementById('products-heading').scrollIntoView({ block: 'nearest' });
  } catch (e) {
    prev.disabled = pageIndex === 0;
    next.disabled = !cursors[pageIndex + 1];
    say(e.message, true);
  }
}
prev.addEventListener('click', () => turn(pageIndex - 1));
next.addEventListener('click', () => turn(pageIndex + 1));

function renderOrders(orders) {
  const body = document.getElementById('orders');
  body.replaceChildren();
  if (orders.length === 0) {
    const r = body.insertRow();
    cell(r, 'No orders yet.').colSpan = 4;
    return;
  }
  for (const o of orders) {
    const row = body.insertRow();
    cell(row, o.orderNumber).className = 'order-number row-title';
    cell(row, o.customerEmail || '', 'Customer');
    cell(row, money(o.total, o.currency), 'Total');
    cell(row, o.status, 'Status');
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
  } catch (e) {
    say(e.message, true);
  }
})();
