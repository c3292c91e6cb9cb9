/**
 * A realistic store generator: products with variants and images, customers
 * with addresses, orders spread over past months whose line items reference
 * real products, refunds and fulfillments on some of them, and daily
 * storefront visits. Content (names, prices, quantities, dates relative to the
 * platform clock) is deterministic given `seed`; identifiers are random UUIDs
 * so several stores can share one database. One transaction, prepared
 * statements: 10,000 products seed in about a second.
 */
import { randomUUID } from 'node:crypto';
import type { ResourceDeps } from '../api/http.js';
import { stmt, transaction } from '../api/http.js';
import { refreshProductDoc } from '../api/products.js';

export interface SeedOptions {
  /** Number of products. */
  products: number;
  /** @default clamp(products / 2, 5, 1000) */
  customers?: number;
  /** @default clamp(products * 3, 10, 3000) */
  orders?: number;
  /** Months of order history before the current clock time. @default 6 */
  months?: number;
  /** PRNG seed: the same seed gives the same content. @default 1 */
  seed?: number;
}

export interface SeedResult {
  products: number;
  variants: number;
  customers: number;
  orders: number;
}

/** Sales tax rate the local platform applies to orders. */
export const TAX_RATE = 0.08;

function prng(seed: number): () => number {
  let a = seed >>> 0 || 1;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ADJECTIVES = [
  'Classic',
  'Organic',
  'Vintage',
  'Modern',
  'Handmade',
  'Premium',
  'Everyday',
  'Recycled',
  'Lightweight',
  'Cozy',
  'Rustic',
  'Minimal',
];
const NOUNS: Array<[string, string]> = [
  ['T-Shirt', 'Apparel'],
  ['Hoodie', 'Apparel'],
  ['Sneakers', 'Footwear'],
  ['Boots', 'Footwear'],
  ['Backpack', 'Bags'],
  ['Tote Bag', 'Bags'],
  ['Mug', 'Kitchen'],
  ['Teapot', 'Kitchen'],
  ['Candle', 'Home'],
  ['Throw Blanket', 'Home'],
  ['Notebook', 'Stationery'],
  ['Pen Set', 'Stationery'],
  ['Water Bottle', 'Outdoor'],
  ['Sunglasses', 'Accessories'],
  ['Watch', 'Accessories'],
  ['Scarf', 'Accessories'],
];
const COLORS = ['Black', 'White', 'Navy', 'Olive', 'Sand', 'Red'];
const SIZES = ['S', 'M', 'L', 'XL'];
const FIRST = [
  'Ava',
  'Liam',
  'Noah',
  'Emma',
  'Mia',
  'Lucas',
  'Sofia',
  'Ethan',
  'Chloe',
  'Mateo',
  'Zoe',
  'Arjun',
  'Hana',
  'Omar',
  'Lena',
  'Kai',
];
const LAST = [
  'Smith',
  'Garcia',
  'Chen',
  'Müller',
  'Rossi',
  'Kowalski',
  'Nguyen',
  'Okafor',
  'Silva',
  'Novak',
  'Kim',
  'Dubois',
];
const CITIES: Array<[string, string, string]> = [
  ['Portland', 'OR', 'US'],
  ['Austin', 'TX', 'US'],
  ['Chicago', 'IL', 'US'],
  ['Denver', 'CO', 'US'],
  ['Berlin', 'BE', 'DE'],
  ['Lyon', 'ARA', 'FR'],
  ['Manchester', 'ENG', 'GB'],
  ['Toronto', 'ON', 'CA'],
];
const PAYMENT = [
  'card',
  'card',
  'card',
  'paypal',
  'paypal',
  'bank_transfer',
  'cash_on_delivery',
  'gift_card',
];

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(n)));

/** Fills `storeId` with realistic data. Synchronous; one transaction. */
export function seedStore(deps: ResourceDeps, storeId: string, options: SeedOptions): SeedResult {
  const productCount = Math.max(0, Math.floor(options.products));
  const customerCount = Math.max(
    0,
    Math.floor(options.customers ?? clamp(productCount / 2, 5, 1000)),
  );
  const orderCount =
    productCount === 0
      ? 0
      : Math.max(0, Math.floor(options.orders ?? clamp(productCount * 3, 10, 3000)));
  const months = Math.max(1, Math.floor(options.months ?? 6));
  const rand = prng(options.seed ?? 1);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const nowMs = deps.clock.now().getTime();
  const spanMs = months * 30 * 86_400_000;

  const store = stmt(deps, 'SELECT currency FROM stores WHERE id = ?').get(storeId) as
    | { currency: string }
    | undefined;
  if (!store) throw new Error(`seedStore: no store ${storeId}`);
  const currency = store.currency;

  const insertProduct = stmt(
    deps,
    `INSERT INTO products (id, store_id, name, slug, description, status, price_cents, compare_at_price_cents, currency, sku, barcode, weight_milli, weight_unit, track_inventory, inventory_quantity, category, tags, images, metadata, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'kg', 1, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertVariant = stmt(
    deps,
    `INSERT INTO variants (id, store_id, product_id, title, sku, price_cents, compare_at_price_cents, inventory_quantity, options, position, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertCustomer = stmt(
    deps,
    `INSERT INTO customers (id, store_id, email, first_name, last_name, phone, accepts_marketing, note, tags, addresses, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, ?)`,
  );
  const insertOrder = stmt(
    deps,
    `INSERT INTO orders (id, store_id, order_number, status, fulfillment_status, customer_id, customer_email, subtotal_cents, tax_cents, shipping_cents, total_cents, refunded_cents, currency, items, shipping_address, payment_method, notes, tags, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '[]', ?, ?)`,
  );
  const insertFulfillment = stmt(
    deps,
    `INSERT INTO fulfillments (id, store_id, order_id, status, tracking_number, tracking_company, tracking_url, items, created_at, updated_at)
     VALUES (?, ?, ?, 'success', ?, 'UPS', ?, ?, ?, ?)`,
  );
  const insertRefund = stmt(
    deps,
    `INSERT INTO refunds (id, store_id, order_id, amount_cents, reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const upsertVisits = stmt(
    deps,
    `INSERT INTO store_visits (store_id, day, sessions) VALUES (?, ?, ?)
     ON CONFLICT (store_id, day) DO UPDATE SET sessions = sessions + excluded.sessions`,
  );
  const countSlugs = stmt(deps, 'SELECT count(*) AS n FROM products WHERE store_id = ?');
  const nextNumber = stmt(deps, 'SELECT next_order_number AS n FROM stores WHERE id = ?');
  const setNextNumber = stmt(deps, 'UPDATE stores SET next_order_number = ? WHERE id = ?');

  interface SeededVariant {
    id: string;
    productId: string;
    name: string;
    priceCents: number;
  }
  const sellable: SeededVariant[] = [];
  const productIds: string[] = [];
  let variantTotal = 0;

  return transaction(deps, () => {
    // Slugs stay unique when a store is seeded twice.
    const offset = (countSlugs.get(storeId) as { n: number }).n;
    for (let i = 0; i < productCount; i++) {
      const [noun, category] = pick(NOUNS);
      const name = `${pick(ADJECTIVES)} ${noun}`;
      const n = offset + i + 1;
      const id = randomUUID();
      const priceCents = int(5, 200) * 100 - (rand() < 0.7 ? 1 : 0);
      const compare = rand() < 0.25 ? priceCents + int(5, 40) * 100 : null;
      const created = new Date(nowMs - spanMs - int(0, 30) * 86_400_000 + i * 1000).toISOString();
      const slug = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${n}`;
      const imageCount = int(1, 3);
      const images = Array.from({ length: imageCount }, (_, p) => ({
        url: `https://cdn.store.local/products/${slug}/${p + 1}.jpg`,
        alt: `${name} view ${p + 1}`,
        position: p,
      }));
      const usesSize = category === 'Apparel' || category === 'Footwear';
      const variantCount = int(1, 3);
      let stock = 0;
      const variants: Array<[string, string, number, string]> = [];
      for (let v = 0; v < variantCount; v++) {
        const color = COLORS[(i + v) % COLORS.length]!;
        const size = SIZES[v % SIZES.length]!;
        const title = usesSize ? `${color} / ${size}` : color;
        const options = usesSize ? { color, size } : { color };
        const qty = int(0, 120);
        stock += qty;
        variants.push([randomUUID(), title, qty, JSON.stringify(options)]);
      }
      insertProduct.run(
        id,
        storeId,
        name,
        slug,
        `${name} for everyday use. Made to last, shipped in recycled packaging.`,
        rand() < 0.85 ? 'active' : rand() < 0.5 ? 'draft' : 'archived',
        priceCents,
        compare,
        currency,
        `SKU-${String(n).padStart(6, '0')}`,
        String(400_000_000_000 + n),
        int(100, 3000),
        stock,
        category,
        JSON.stringify([category.toLowerCase(), rand() < 0.3 ? 'sale' : 'new']),
        JSON.stringify(images),
        JSON.stringify({ origin: pick(['PT', 'US', 'VN', 'DE']) }),
        created,
        created,
      );
      variants.forEach(([vid, title, qty, opts], position) => {
        insertVariant.run(
          vid,
          storeId,
          id,
          title,
          `SKU-${String(n).padStart(6, '0')}-${position + 1}`,
          priceCents,
          compare,
          qty,
          opts,
          position,
          created,
          created,
        );
        sellable.push({ id: vid, productId: id, name: `${name} - ${title}`, priceCents });
      });
      variantTotal += variantCount;
      productIds.push(id);
    }
    for (const id of productIds) refreshProductDoc(deps, id);

    const customerList: Array<{ id: string; email: string; address: Record<string, string> }> = [];
    for (let i = 0; i < customerCount; i++) {
      const first = pick(FIRST);
      const last = pick(LAST);
      const [city, region, country] = pick(CITIES);
      const id = randomUUID();
      const email = `${first}.${last}.${i + 1}.${id.slice(0, 6)}@example.com`
        .toLowerCase()
        .normalize('NFKD')
        .replace(/[\u0300-\u036f]/g, '');
      const address = {
        name: `${first} ${last}`,
        line1: `${int(1, 999)} ${pick(['Main', 'Oak', 'Park', 'Mill', 'High'])} Street`,
        line2: '',
        city,
        region,
        postalCode: String(int(10000, 99999)),
        country,
        phone: `+1555${String(int(0, 9_999_999)).padStart(7, '0')}`,
      };
      const created = new Date(nowMs - spanMs - int(0, 60) * 86_400_000 + i * 1000).toISOString();
      insertCustomer.run(
        id,
        storeId,
        email,
        first,
        last,
        address.phone,
        rand() < 0.4 ? 1 : 0,
        JSON.stringify(rand() < 0.2 ? ['vip'] : []),
        JSON.stringify([{ id: randomUUID(), ...address, default: true }]),
        created,
        created,
      );
      customerList.push({ id, email, address });
    }

    let number = (nextNumber.get(storeId) as { n: number }).n;
    const visits = new Map<string, number>();
    const orderTimes = Array.from(
      { length: orderCount },
      () => nowMs - Math.floor(rand() * spanMs),
    ).sort((a, b) => a - b);
    for (const t of orderTimes) {
      if (sellable.length === 0) break;
      const id = randomUUID();
      const created = new Date(t).toISOString();
      const lines = int(1, 3);
      const items = Array.from({ length: lines }, () => {
        const v = pick(sellable);
        return {
          id: randomUUID(),
          productId: v.productId,
          variantId: v.id,
          name: v.name,
          quantity: int(1, 3),
          price: v.priceCents / 100,
        };
      });
      const subtotal = items.reduce((s, it) => s + Math.round(it.price * 100) * it.quantity, 0);
      const tax = Math.round(subtotal * TAX_RATE);
      const shipping = subtotal >= 5000 ? 0 : 599;
      const total = subtotal + tax + shipping;
      const customer = customerList.length > 0 ? pick(customerList) : null;
      const ageDays = (nowMs - t) / 86_400_000;
      const roll = rand();
      const status = roll < 0.05 ? 'cancelled' : ageDays > 14 ? 'closed' : 'open';
      const fulfilled = status !== 'cancelled' && ageDays > 3;
      const refunded =
        status !== 'cancelled' && rand() < 0.06
          ? rand() < 0.5
            ? total
            : Math.round(total / 4)
          : 0;
      const address = customer?.address ?? {
        line1: '1 Main Street',
        city: 'Portland',
        country: 'US',
      };
      insertOrder.run(
        id,
        storeId,
        `#${number++}`,
        status,
        fulfilled ? 'fulfilled' : 'unfulfilled',
        customer?.id ?? null,
        customer?.email ?? 'guest@example.com',
        subtotal,
        tax,
        shipping,
        total,
        refunded,
        currency,
        JSON.stringify(items),
        JSON.stringify(address),
        pick(PAYMENT),
        created,
        created,
      );
      if (fulfilled) {
        const tracking = `1Z${id.replace(/-/g, '').slice(0, 16).toUpperCase()}`;
        insertFulfillment.run(
          randomUUID(),
          storeId,
          id,
          tracking,
          `https://track.store.local/ups/${tracking}`,
          JSON.stringify(items.map((it) => ({ itemId: it.id, quantity: it.quantity }))),
          created,
          created,
        );
      }
      if (refunded > 0) {
        insertRefund.run(randomUUID(), storeId, id, refunded, 'customer request', created, created);
      }
      const day = created.slice(0, 10);
      visits.set(day, (visits.get(day) ?? 0) + int(20, 40));
    }
    for (const [day, sessions] of visits) upsertVisits.run(storeId, day, sessions);
    setNextNumber.run(number, storeId);
    return {
      products: productCount,
      variants: variantTotal,
      customers: customerCount,
      orders: orderTimes.length,
    };
  });
}
