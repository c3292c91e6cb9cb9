import { useCallback, useEffect, useRef, useState } from 'react';
import { api, messageOf } from './api';
import { useApi } from './use-api';

interface Product {
  id: string;
  name: string;
  price?: number;
  currency?: string;
  inventoryQuantity?: number | null;
}
interface ProductPage {
  data: Product[];
  nextCursor: string | null;
  total: number;
  perPage: number;
}
interface Order {
  id: string;
  orderNumber: string;
  customerEmail?: string | null;
  total?: number;
  currency?: string;
  status: string;
}
type Notes = Record<string, string>;
type Say = (text: string, isError?: boolean) => void;

const money = (n: number | undefined, cur: string | undefined) =>
  (typeof n === 'number' ? n.toFixed(2) : '') + (cur ? ` ${cur}` : '');
const clock = () => new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/**
 * The embedded page: the store's products a page at a time (the platform's cursor),
 * a note per product saved in the app's own table, "+1 stock" written to the platform,
 * and the latest orders. Every call goes through `store-app-kit/browser` (see api.ts).
 */
export function App() {
  const store = useApi<{ storeId: string; name: string | null }>('/api/store');
  const [status, setStatus] = useState({ text: 'Loading…', isError: false });
  const say = useCallback<Say>((text, isError = false) => setStatus({ text, isError }), []);
  const [notes, setNotes] = useState<Notes | null>(null);
  const [productsShown, setProductsShown] = useState(false);
  const shown = useCallback(() => setProductsShown(true), []);

  // For tests and screen readers alike: the page is ready once the store and its products show.
  useEffect(() => {
    if (store.state === 'ok' && productsShown) document.body.dataset['loaded'] = 'true';
  }, [store.state, productsShown]);

  useEffect(() => {
    api<{ data: { productId: string; note: string }[] }>('/api/notes').then(
      (r) => setNotes(Object.fromEntries(r.data.map((n) => [n.productId, n.note]))),
      (err: unknown) => say(messageOf(err), true),
    );
  }, [say]);

  return (
    <>
      <header>
        <h1>My store app</h1>
        <div className="muted store">
          Store:{' '}
          {store.state === 'ok' && store.data.name ? (
            <strong id="store-name">{store.data.name}</strong>
          ) : (
            <code id="store-name">{store.state === 'ok' ? store.data.storeId : ''}</code>
          )}
        </div>
        <div id="status" className={status.isError ? 'muted error' : 'muted'} role="status">
          {status.text}
        </div>
      </header>
      <main>
        {notes && (
          <Products
            notes={notes}
            onNoteSaved={(productId, note) => setNotes((n) => ({ ...n, [productId]: note }))}
            say={say}
            onShown={shown}
          />
        )}
        <Orders />
      </main>
    </>
  );
}

function Products({
  notes,
  onNoteSaved,
  say,
  onShown,
}: {
  notes: Notes;
  onNoteSaved: (productId: string, note: string) => void;
  say: Say;
  onShown: () => void;
}) {
  // cursors[i] opens page i; the platform gives the next one with each page.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [pageIndex, setPageIndex] = useState(0);
  const cursor = cursors[pageIndex];
  const page = useApi<ProductPage>(
    `/api/products${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
  );
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    if (page.state === 'error') say(page.message, true);
    if (page.state !== 'ok') return;
    const { nextCursor } = page.data;
    setCursors((c) =>
      nextCursor ? [...c.slice(0, pageIndex + 1), nextCursor] : c.slice(0, pageIndex + 1),
    );
    document.body.dataset['page'] = String(pageIndex + 1);
    onShown();
    say('');
  }, [page, pageIndex, say, onShown]);

  const turn = (index: number) => {
    setPageIndex(index);
    heading.current?.scrollIntoView({ block: 'nearest' });
  };
  const data = page.state === 'ok' ? page.data : undefined;
  const first = data ? pageIndex * data.perPage + 1 : 0;
  const pages = data ? Math.max(1, Math.ceil((data.total || 0) / data.perPage)) : 1;

  return (
    <section className="card" aria-labelledby="products-heading">
      <div className="card-head">
        <h2 id="products-heading" ref={heading}>
          Products
        </h2>
        <span id="product-count" className="muted">
          {data && data.data.length > 0
            ? `${first}–${first + data.data.length - 1} of ${data.total}`
            : ''}
        </span>
      </div>
      <table className="stack">
        <thead>
          <tr>
            <th>Name</th>
            <th>Price</th>
            <th>Stock</th>
            <th>Note</th>
          </tr>
        </thead>
        <tbody id="products">
          {data?.data.length === 0 && (
            <tr>
              <td colSpan={4}>No products yet.</td>
            </tr>
          )}
          {data?.data.map((p) => (
            <ProductRow
              key={p.id}
              product={p}
              saved={notes[p.id] ?? ''}
              onSaved={(note) => onNoteSaved(p.id, note)}
              say={say}
            />
          ))}
        </tbody>
      </table>
      <nav className="pager" aria-label="Product pages">
        <button
          type="button"
          id="prev-page"
          disabled={!data || pageIndex === 0}
          onClick={() => turn(pageIndex - 1)}
        >
          Previous
        </button>
        <span id="page-label" className="muted">
          {data ? `Page ${pageIndex + 1} of ${pages}` : ''}
        </span>
        <button
          type="button"
          id="next-page"
          disabled={!data?.nextCursor}
          onClick={() => turn(pageIndex + 1)}
        >
          Next
        </button>
      </nav>
    </section>
  );
}

type RowStatus = { text: string; kind: '' | 'pending' | 'ok' | 'error' };

function ProductRow({
  product,
  saved,
  onSaved,
  say,
}: {
  product: Product;
  saved: string;
  onSaved: (note: string) => void;
  say: Say;
}) {
  const [note, setNote] = useState(saved);
  const [stock, setStock] = useState(product.inventoryQuantity ?? 0);
  const [busy, setBusy] = useState<'note' | 'stock' | null>(null);
  const [rowStatus, setRowStatus] = useState<RowStatus>({ text: '', kind: '' });
  const show = (text: string, kind: RowStatus['kind']) => setRowStatus({ text, kind });

  async function saveNote() {
    setBusy('note');
    show('Saving…', 'pending');
    try {
      await api(`/api/products/${encodeURIComponent(product.id)}/note`, {
        method: 'PUT',
        body: JSON.stringify({ note }),
      });
      onSaved(note);
      show(`${note.trim() === '' ? 'Note removed' : 'Saved'} at ${clock()}`, 'ok');
      say(`Note saved for ${product.name}`);
    } catch (err) {
      show(`Not saved: ${messageOf(err)}`, 'error');
      say(messageOf(err), true);
    } finally {
      setBusy(null);
    }
  }

  async function addStock() {
    setBusy('stock');
    show('Updating stock…', 'pending');
    try {
      const r = await api<{ inventoryQuantity: number }>('/api/inventory', {
        method: 'POST',
        body: JSON.stringify({ productId: product.id, increment: 1 }),
      });
      setStock(r.inventoryQuantity);
      show(`Stock updated at ${clock()}`, 'ok');
      say(`Stock updated for ${product.name}`);
    } catch (err) {
      show(`Stock not updated: ${messageOf(err)}`, 'error');
      say(messageOf(err), true);
    } finally {
      setBusy(null);
    }
  }

  return (
    <tr data-product-id={product.id}>
      <td className="product-name row-title">{product.name}</td>
      <td data-label="Price">{money(product.price, product.currency)}</td>
      <td data-label="Stock" className="stock">
        {String(stock)}
      </td>
      <td className="note">
        <div className="note-controls">
          <input
            type="text"
            maxLength={1000}
            placeholder="Add a note"
            aria-label={`Note for ${product.name}`}
            value={note}
            onChange={(e) => {
              setNote(e.target.value);
              show(e.target.value === saved ? '' : 'Unsaved changes', 'pending');
            }}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault();
                void saveNote();
              }
            }}
          />
          <button
            type="button"
            className="primary save-note"
            disabled={busy === 'note'}
            onClick={() => void saveNote()}
          >
            Save note
          </button>
          <button
            type="button"
            className="add-stock"
            aria-label={`Add one to the stock of ${product.name}`}
            disabled={busy === 'stock'}
            onClick={() => void addStock()}
          >
            +1 stock
          </button>
          <span className={`row-status${rowStatus.kind ? ` ${rowStatus.kind}` : ''}`} role="status">
            {rowStatus.text}
          </span>
        </div>
      </td>
    </tr>
  );
}

function Orders() {
  const orders = useApi<{ data: Order[] }>('/api/orders');
  return (
    <section className="card" aria-labelledby="orders-heading">
      <div className="card-head">
        <h2 id="orders-heading">Recent orders</h2>
      </div>
      <table className="stack">
        <thead>
          <tr>
            <th>Order</th>
            <th>Customer</th>
            <th>Total</th>
            <th>Status</th>
          </tr>
        </thead>
        <tbody id="orders">
          {orders.state === 'ok' && orders.data.data.length === 0 && (
            <tr>
              <td colSpan={4}>No orders yet.</td>
            </tr>
          )}
          {orders.state === 'ok' &&
            orders.data.data.map((o) => (
              <tr key={o.id}>
                <td className="order-number row-title">{o.orderNumber}</td>
                <td data-label="Customer">{o.customerEmail ?? ''}</td>
                <td data-label="Total">{money(o.total, o.currency)}</td>
                <td data-label="Status">{o.status}</td>
              </tr>
            ))}
        </tbody>
      </table>
    </section>
  );
}
