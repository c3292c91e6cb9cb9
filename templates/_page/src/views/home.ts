/**
 * The embedded home page: server-rendered HTML, its script and styles as files
 * of the app's origin (public/home.js and public/home.css, served at /assets/),
 * so the page's CSP allows 'self' only and there is no frontend build step.
 * The script talks to this app's own JSON routes with the app session token
 * (through store-app-kit/browser); it never sees a platform access token.
 * No Node module here: the Workers template renders the same page in workerd.
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
}

export function renderHomePage({ storeId, storeName, sessionToken }: HomePageInput): string {
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
<script type="module" src="/assets/home.js"></script>
<link rel="stylesheet" href="/assets/home.css">
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
</body>
</html>`;
}
