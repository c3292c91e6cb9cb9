/**
 * Products, variants, collections and inventory. A product row holds its
 * tags, images and metadata as JSON text; variants live in their own table and
 * are fetched for a whole page with one batched query.
 */
import { randomUUID } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import { type COLLECTION_SORTS, collectionCreate } from '../../schemas/collections.js';
import { inventoryAdjustment } from '../../schemas/inventory.js';
import {
  type PRODUCT_SORTS,
  productCreate,
  productUpdate,
  type VARIANT_SORTS,
  variantInput,
} from '../../schemas/products.js';
import {
  ApiError,
  conflict,
  fromCents,
  groupScope,
  idParam,
  invalid,
  isUniqueViolation,
  notFound,
  nullableCents,
  type ResourceDeps,
  stmt,
  storeOf,
  toCents,
  transaction,
} from './http.js';
import { BASE_SORTS, listPage, parsePageQuery, type SortFields } from './pagination.js';
import { slugify, validateBody } from './validate.js';

export { PRODUCT_STATUSES, WEIGHT_UNITS } from '../../schemas/products.js';

const PRODUCT_SORT_COLUMNS: SortFields<(typeof PRODUCT_SORTS)[number]> = {
  ...BASE_SORTS,
  name: { column: 'name', type: 'text' },
  price: { column: 'price_cents', type: 'int' },
};
const VARIANT_SORT_COLUMNS: SortFields<(typeof VARIANT_SORTS)[number]> = {
  ...BASE_SORTS,
  position: { column: 'position', type: 'int' },
};
const COLLECTION_SORT_COLUMNS: SortFields<(typeof COLLECTION_SORTS)[number]> = {
  ...BASE_SORTS,
  name: { column: 'name', type: 'text' },
};

const PRODUCT_COLUMNS =
  'id, name, slug, description, status, price_cents, compare_at_price_cents, currency, sku, barcode, weight_milli, weight_unit, track_inventory, inventory_quantity, category, tags, images, metadata, created_at, updated_at';
const VARIANT_COLUMNS =
  'id, product_id, title, sku, price_cents, compare_at_price_cents, inventory_quantity, options, position, created_at, updated_at';

interface ProductRow {
  id: string;
  name: string;
  slug: string;
  description: string;
  status: string;
  price_cents: number;
  compare_at_price_cents: number | null;
  currency: string;
  sku: string;
  barcode: string;
  weight_milli: number;
  weight_unit: string;
  track_inventory: number;
  inventory_quantity: number;
  category: string;
  tags: string;
  images: string;
  metadata: string;
  created_at: string;
  updated_at: string;
}

interface VariantRow {
  id: string;
  product_id: string;
  title: string;
  sku: string;
  price_cents: number;
  compare_at_price_cents: number | null;
  inventory_quantity: number;
  options: string;
  position: number;
  created_at: string;
  updated_at: string;
}

export interface Variant {
  id: string;
  productId: string;
  title: string;
  sku: string;
  price: number;
  compareAtPrice: number | null;
  inventoryQuantity: number;
  options: Record<string, string>;
  position: number;
  createdAt: string;
  updatedAt: string;
}

const toVariant = (r: VariantRow): Variant => ({
  id: r.id,
  productId: r.product_id,
  title: r.title,
  sku: r.sku,
  price: fromCents(r.price_cents),
  compareAtPrice: nullableCents(r.compare_at_price_cents),
  inventoryQuantity: r.inventory_quantity,
  options: JSON.parse(r.options) as Record<string, string>,
  position: r.position,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

function toProduct(r: ProductRow, variants: Variant[]) {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    status: r.status,
    price: fromCents(r.price_cents),
    compareAtPrice: nullableCents(r.compare_at_price_cents),
    currency: r.currency,
    sku: r.sku,
    barcode: r.barcode,
    weight: r.weight_milli / 1000,
    weightUnit: r.weight_unit,
    trackInventory: r.track_inventory === 1,
    inventoryQuantity: r.inventory_quantity,
    category: r.category,
    tags: JSON.parse(r.tags) as string[],
    images: JSON.parse(r.images) as unknown[],
    variants,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

// The read paths (GET list and GET one) write the JSON text directly: tags,
// images, metadata and options are already JSON in their columns, so they are
// spliced in rather than parsed and serialised again. Field order and values
// match toProduct/toVariant exactly (the tests compare both).
const str = JSON.stringify;
const numOrNull = (c: number | null) => (c === null ? 'null' : String(c / 100));

function variantJson(r: VariantRow): string {
  return `{"id":${str(r.id)},"productId":${str(r.product_id)},"title":${str(r.title)},"sku":${str(r.sku)},"price":${r.price_cents / 100},"compareAtPrice":${numOrNull(r.compare_at_price_cents)},"inventoryQuantity":${r.inventory_quantity},"options":${r.options},"position":${r.position},"createdAt":${str(r.created_at)},"updatedAt":${str(r.updated_at)}}`;
}

function productJson(r: ProductRow, variants: VariantRow[] | undefined): string {
  return `{"id":${str(r.id)},"name":${str(r.name)},"slug":${str(r.slug)},"description":${str(r.description)},"status":${str(r.status)},"price":${r.price_cents / 100},"compareAtPrice":${numOrNull(r.compare_at_price_cents)},"currency":${str(r.currency)},"sku":${str(r.sku)},"barcode":${str(r.barcode)},"weight":${r.weight_milli / 1000},"weightUnit":${str(r.weight_unit)},"trackInventory":${r.track_inventory === 1},"inventoryQuantity":${r.inventory_quantity},"category":${str(r.category)},"tags":${r.tags},"images":${r.images},"variants":[${variants ? variants.map(variantJson).join(',') : ''}],"metadata":${r.metadata},"createdAt":${str(r.created_at)},"updatedAt":${str(r.updated_at)}}`;
}

function variantRowsOf(deps: ResourceDeps, productIds: string[]): Map<string, VariantRow[]> {
  const byProduct = new Map<string, VariantRow[]>();
  if (productIds.length === 0) return byProduct;
  const rows = stmt(
    deps,
    `SELECT ${VARIANT_COLUMNS} FROM variants WHERE product_id IN (SELECT value FROM json_each(?)) ORDER BY product_id, position`,
  ).all(JSON.stringify(productIds)) as VariantRow[];
  for (const row of rows) {
    const list = byProduct.get(row.product_id);
    if (list) list.push(row);
    else byProduct.set(row.product_id, [row]);
  }
  return byProduct;
}

/**
 * Rewrites the product's stored API JSON. Every write to a product or its
 * variants ends with this call (inside the same transaction).
 */
export function refreshProductDoc(deps: ResourceDeps, productId: string): void {
  const row = stmt(deps, `SELECT ${PRODUCT_COLUMNS} FROM products WHERE id = ?`).get(productId) as
    | ProductRow
    | undefined;
  if (!row) return;
  const doc = productJson(row, variantRowsOf(deps, [productId]).get(productId));
  stmt(deps, 'UPDATE products SET doc = ? WHERE id = ?').run(doc, productId);
}

interface ImageInput {
  url: string;
  alt?: string;
  position?: number;
}
interface VariantInput {
  title: string;
  sku?: string;
  price?: number;
  compareAtPrice?: number | null;
  inventoryQuantity?: number;
  options?: Record<string, string>;
}
interface ProductInput {
  name?: string;
  slug?: string;
  description?: string;
  status?: string;
  price?: number;
  compareAtPrice?: number | null;
  currency?: string;
  sku?: string;
  barcode?: string;
  weight?: number;
  weightUnit?: string;
  trackInventory?: boolean;
  inventoryQuantity?: number;
  category?: string;
  tags?: string[];
  images?: ImageInput[];
  metadata?: Record<string, unknown>;
  variants?: VariantInput[];
}

/** Positions are zero-based and follow the given `position`, then array order. */
function normalizeImages(images: ImageInput[]) {
  return images
    .map((img, i) => ({ img, key: img.position ?? i, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i)
    .map(({ img }, position) => ({ url: img.url, alt: img.alt ?? '', position }));
}

function loadVariants(deps: ResourceDeps, productIds: string[]): Map<string, Variant[]> {
  const byProduct = new Map<string, Variant[]>();
  for (const [id, rows] of variantRowsOf(deps, productIds)) byProduct.set(id, rows.map(toVariant));
  return byProduct;
}

function productRow(deps: ResourceDeps, storeId: string, id: string): ProductRow {
  const row = stmt(
    deps,
    `SELECT ${PRODUCT_COLUMNS} FROM products WHERE id = ? AND store_id = ?`,
  ).get(id, storeId) as ProductRow | undefined;
  if (!row) throw notFound('Product');
  return row;
}

/** One product with its variants, or throws 404. */
export function readProduct(deps: ResourceDeps, storeId: string, id: string) {
  const row = productRow(deps, storeId, id);
  return toProduct(row, loadVariants(deps, [id]).get(id) ?? []);
}

function slugTaken(deps: ResourceDeps, storeId: string, slug: string, exceptId?: string): boolean {
  return (
    stmt(deps, 'SELECT 1 AS x FROM products WHERE store_id = ? AND slug = ? AND id != ?').get(
      storeId,
      slug,
      exceptId ?? '',
    ) !== undefined
  );
}

/** A slug derived from the name gets a numeric suffix when taken; an explicit one gets 409. */
function uniqueDerivedSlug(deps: ResourceDeps, storeId: string, name: string): string {
  const base = slugify(name);
  if (!slugTaken(deps, storeId, base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!slugTaken(deps, storeId, candidate)) return candidate;
  }
}

function insertVariant(
  deps: ResourceDeps,
  storeId: string,
  productId: string,
  productPriceCents: number,
  v: VariantInput,
  position: number,
  now: string,
): void {
  stmt(
    deps,
    `INSERT INTO variants (id, store_id, product_id, title, sku, price_cents, compare_at_price_cents, inventory_quantity, options, position, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    randomUUID(),
    storeId,
    productId,
    v.title,
    v.sku ?? '',
    v.price === undefined ? productPriceCents : toCents(v.price),
    v.compareAtPrice == null ? null : toCents(v.compareAtPrice),
    v.inventoryQuantity ?? 0,
    JSON.stringify(v.options ?? {}),
    position,
    now,
    now,
  );
}

/** Keeps the product's inventoryQuantity the sum of its variants' when it has any. */
function syncProductStock(deps: ResourceDeps, productId: string, now: string): void {
  stmt(
    deps,
    `UPDATE products SET inventory_quantity = (SELECT sum(inventory_quantity) FROM variants WHERE product_id = ?), updated_at = ?
     WHERE id = ? AND EXISTS (SELECT 1 FROM variants WHERE product_id = ?)`,
  ).run(productId, now, productId, productId);
  refreshProductDoc(deps, productId);
}

function negativeStock(input: { inventoryQuantity?: number }, field: string) {
  if (input.inventoryQuantity !== undefined && input.inventoryQuantity < 0) {
    return {
      field,
      message: 'must be at least 0 (adjust with allowNegative via the inventory endpoint)',
    };
  }
  return null;
}

function createProduct(deps: ResourceDeps, storeId: string, body: unknown) {
  const input = validateBody<ProductInput>(productCreate, body);
  const bad = [
    negativeStock(input, 'inventoryQuantity'),
    ...(input.variants ?? []).map((v, i) => negativeStock(v, `variants[${i}].inventoryQuantity`)),
  ].filter((d) => d !== null);
  if (bad.length > 0) throw invalid(bad);
  const storeCurrency = (
    stmt(deps, 'SELECT currency FROM stores WHERE id = ?').get(storeId) as { currency: string }
  ).currency;
  const id = randomUUID();
  const now = deps.clock.now().toISOString();
  const priceCents = toCents(input.price ?? 0);
  transaction(deps, () => {
    let slug: string;
    if (input.slug !== undefined) {
      if (slugTaken(deps, storeId, input.slug))
        throw conflict('slug', 'A product with this slug already exists');
      slug = input.slug;
    } else {
      slug = uniqueDerivedSlug(deps, storeId, input.name!);
    }
    stmt(
      deps,
      `INSERT INTO products (${PRODUCT_COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      input.name,
      slug,
      input.description ?? '',
      input.status ?? 'draft',
      priceCents,
      input.compareAtPrice == null ? null : toCents(input.compareAtPrice),
      input.currency ?? storeCurrency,
      input.sku ?? '',
      input.barcode ?? '',
      Math.round((input.weight ?? 0) * 1000),
      input.weightUnit ?? 'kg',
      input.trackInventory === false ? 0 : 1,
      input.inventoryQuantity ?? 0,
      input.category ?? '',
      JSON.stringify(input.tags ?? []),
      JSON.stringify(normalizeImages(input.images ?? [])),
      JSON.stringify(input.metadata ?? {}),
      now,
      now,
      storeId,
    );
    (input.variants ?? []).forEach((v, i) => {
      insertVariant(deps, storeId, id, priceCents, v, i, now);
    });
    syncProductStock(deps, id, now);
  });
  return readProduct(deps, storeId, id);
}

const UPDATE_COLUMNS: Record<string, [string, (v: unknown) => unknown]> = {
  name: ['name', (v) => v],
  slug: ['slug', (v) => v],
  description: ['description', (v) => v],
  status: ['status', (v) => v],
  price: ['price_cents', (v) => toCents(v as number)],
  compareAtPrice: ['compare_at_price_cents', (v) => (v === null ? null : toCents(v as number))],
  currency: ['currency', (v) => v],
  sku: ['sku', (v) => v],
  barcode: ['barcode', (v) => v],
  weight: ['weight_milli', (v) => Math.round((v as number) * 1000)],
  weightUnit: ['weight_unit', (v) => v],
  trackInventory: ['track_inventory', (v) => (v ? 1 : 0)],
  category: ['category', (v) => v],
  tags: ['tags', (v) => JSON.stringify(v)],
  images: ['images', (v) => JSON.stringify(normalizeImages(v as ImageInput[]))],
  metadata: ['metadata', (v) => JSON.stringify(v)],
};

function updateProduct(deps: ResourceDeps, storeId: string, id: string, body: unknown) {
  productRow(deps, storeId, id);
  const input = validateBody<Omit<ProductInput, 'variants' | 'inventoryQuantity'>>(
    productUpdate,
    body,
  );
  productRow(deps, storeId, id);
  if (input.slug !== undefined && slugTaken(deps, storeId, input.slug, id)) {
    throw conflict('slug', 'A product with this slug already exists');
  }
  const sets: string[] = [];
  const params: unknown[] = [];
  for (const [key, value] of Object.entries(input)) {
    const mapping = UPDATE_COLUMNS[key];
    if (!mapping) continue;
    sets.push(`${mapping[0]} = ?`);
    params.push(mapping[1](value));
  }
  const now = deps.clock.now().toISOString();
  sets.push('updated_at = ?');
  params.push(now);
  try {
    // Column names come from UPDATE_COLUMNS only, never from the request.
    stmt(deps, `UPDATE products SET ${sets.join(', ')} WHERE id = ? AND store_id = ?`).run(
      ...params,
      id,
      storeId,
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('slug', 'A product with this slug already exists');
    throw err;
  }
  refreshProductDoc(deps, id);
  return readProduct(deps, storeId, id);
}

const COLLECTION_COLUMNS = 'id, name, slug, description, product_ids, created_at, updated_at';
interface CollectionRow {
  id: string;
  name: string;
  slug: string;
  description: string;
  product_ids: string;
  created_at: string;
  updated_at: string;
}
const toCollection = (r: CollectionRow) => {
  const productIds = JSON.parse(r.product_ids) as string[];
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    productIds,
    productsCount: productIds.length,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
};

function createCollection(deps: ResourceDeps, storeId: string, body: unknown) {
  const input = validateBody<{
    name: string;
    slug?: string;
    description?: string;
    productIds?: string[];
  }>(collectionCreate, body);
  const productIds = [...new Set((input.productIds ?? []).map((p) => p.toLowerCase()))];
  const existing = new Set(
    (
      stmt(
        deps,
        'SELECT id FROM products WHERE store_id = ? AND id IN (SELECT value FROM json_each(?))',
      ).all(storeId, JSON.stringify(productIds)) as Array<{ id: string }>
    ).map((r) => r.id),
  );
  const missing = (input.productIds ?? [])
    .map((p, i) => ({ p: p.toLowerCase(), i }))
    .filter(({ p }) => !existing.has(p))
    .map(({ i }) => ({ field: `productIds[${i}]`, message: 'is not a product of this store' }));
  if (missing.length > 0) throw invalid(missing);
  const slug = input.slug ?? slugify(input.name);
  const id = randomUUID();
  const now = deps.clock.now().toISOString();
  try {
    stmt(
      deps,
      `INSERT INTO collections (${COLLECTION_COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      input.name,
      slug,
      input.description ?? '',
      JSON.stringify(productIds),
      now,
      now,
      storeId,
    );
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict('slug', 'A collection with this slug already exists');
    throw err;
  }
  return toCollection(
    stmt(deps, `SELECT ${COLLECTION_COLUMNS} FROM collections WHERE id = ?`).get(
      id,
    ) as CollectionRow,
  );
}

function inventoryOf(deps: ResourceDeps, storeId: string, productId: string) {
  const row = productRow(deps, storeId, productId);
  const variants = loadVariants(deps, [productId]).get(productId) ?? [];
  return {
    productId,
    trackInventory: row.track_inventory === 1,
    inventoryQuantity: row.inventory_quantity,
    variants: variants.map((v) => ({
      variantId: v.id,
      title: v.title,
      sku: v.sku,
      inventoryQuantity: v.inventoryQuantity,
    })),
    locations: [{ id: 'default', name: 'Default location', available: row.inventory_quantity }],
    updatedAt: row.updated_at,
  };
}

function adjustInventory(deps: ResourceDeps, storeId: string, productId: string, body: unknown) {
  productRow(deps, storeId, productId);
  const input = validateBody<{
    set?: number;
    increment?: number;
    decrement?: number;
    variantId?: string;
    allowNegative?: boolean;
  }>(inventoryAdjustment, body);
  const modes = (['set', 'increment', 'decrement'] as const).filter((k) => input[k] !== undefined);
  if (modes.length !== 1) {
    throw invalid([
      { field: 'set', message: 'exactly one of set, increment or decrement is required' },
    ]);
  }
  const mode = modes[0]!;
  const amount = input[mode]!;
  const now = deps.clock.now().toISOString();
  transaction(deps, () => {
    const product = productRow(deps, storeId, productId);
    const variantId = input.variantId?.toLowerCase();
    const hasVariants =
      stmt(deps, 'SELECT 1 AS x FROM variants WHERE product_id = ? LIMIT 1').get(productId) !==
      undefined;
    let current: number;
    if (variantId) {
      const v = stmt(
        deps,
        'SELECT inventory_quantity AS q FROM variants WHERE id = ? AND product_id = ?',
      ).get(variantId, productId) as { q: number } | undefined;
      if (!v) throw invalid([{ field: 'variantId', message: 'is not a variant of this product' }]);
      current = v.q;
    } else if (hasVariants) {
      throw invalid([
        { field: 'variantId', message: 'is required: this product keeps stock per variant' },
      ]);
    } else {
      current = product.inventory_quantity;
    }
    const next =
      mode === 'set' ? amount : mode === 'increment' ? current + amount : current - amount;
    if (next < 0 && !input.allowNegative) {
      throw new ApiError(
        409,
        'INSUFFICIENT_STOCK',
        `Stock would become ${next}; pass allowNegative: true to allow negative stock`,
        [{ field: mode, message: `stock is ${current}` }],
      );
    }
    if (variantId) {
      stmt(deps, 'UPDATE variants SET inventory_quantity = ?, updated_at = ? WHERE id = ?').run(
        next,
        now,
        variantId,
      );
      syncProductStock(deps, productId, now);
    } else {
      stmt(deps, 'UPDATE products SET inventory_quantity = ?, updated_at = ? WHERE id = ?').run(
        next,
        now,
        productId,
      );
      refreshProductDoc(deps, productId);
    }
  });
  return inventoryOf(deps, storeId, productId);
}

export function productRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const products = groupScope('products');
  const inventory = groupScope('inventory');

  router.get('/products', products, function listProducts(req: Request, res: Response) {
    const storeId = storeOf(res);
    const page = parsePageQuery(req, PRODUCT_SORT_COLUMNS);
    const { rows, pagination } = listPage<{ id: string; doc: string }>(
      deps,
      {
        table: 'products',
        // Only what the page needs: the sort key for the cursor and the stored JSON.
        columns: `id, ${PRODUCT_SORT_COLUMNS[page.sort as (typeof PRODUCT_SORTS)[number]].column}, doc`,
        scopeValue: storeId,
      },
      page,
      PRODUCT_SORT_COLUMNS,
    );
    const data = rows.map((r) => r.doc).join(',');
    res.type('json').send(`{"data":[${data}],"pagination":${JSON.stringify(pagination)}}`);
  });

  router.post('/products', products, function postProduct(req, res) {
    res.status(201).json(createProduct(deps, storeOf(res), req.body));
  });

  router.get('/products/:id', products, function getProduct(req, res) {
    const id = idParam(req, 'Product');
    const row = stmt(deps, 'SELECT doc FROM products WHERE id = ? AND store_id = ?').get(
      id,
      storeOf(res),
    ) as { doc: string } | undefined;
    if (!row) throw notFound('Product');
    res.type('json').send(row.doc);
  });

  router.put('/products/:id', products, function putProduct(req, res) {
    res.json(updateProduct(deps, storeOf(res), idParam(req, 'Product'), req.body));
  });

  router.delete('/products/:id', products, function deleteProduct(req, res) {
    const storeId = storeOf(res);
    const id = idParam(req, 'Product');
    transaction(deps, () => {
      const result = stmt(deps, 'DELETE FROM products WHERE id = ? AND store_id = ?').run(
        id,
        storeId,
      );
      if (result.changes === 0) throw notFound('Product');
      // A deleted product leaves the collections that listed it.
      stmt(
        deps,
        `UPDATE collections SET product_ids = (SELECT json_group_array(value) FROM json_each(product_ids) WHERE value != ?)
         WHERE store_id = ? AND EXISTS (SELECT 1 FROM json_each(product_ids) WHERE value = ?)`,
      ).run(id, storeId, id);
    });
    res.status(204).end();
  });

  router.get('/products/:id/variants', products, function listVariants(req, res) {
    const storeId = storeOf(res);
    const id = idParam(req, 'Product');
    productRow(deps, storeId, id);
    const page = parsePageQuery(req, VARIANT_SORT_COLUMNS, { sort: 'position', order: 'asc' });
    const { rows, pagination } = listPage<VariantRow & Record<string, unknown>>(
      deps,
      {
        table: 'variants',
        columns: VARIANT_COLUMNS,
        scopeColumn: 'product_id',
        scopeValue: id,
      },
      page,
      VARIANT_SORT_COLUMNS,
    );
    res.json({ data: rows.map(toVariant), pagination });
  });

  router.post('/products/:id/variants', products, function postVariant(req, res) {
    const storeId = storeOf(res);
    const productId = idParam(req, 'Product');
    productRow(deps, storeId, productId);
    const input = validateBody<VariantInput>(variantInput, req.body);
    const bad = negativeStock(input, 'inventoryQuantity');
    if (bad) throw invalid([bad]);
    const now = deps.clock.now().toISOString();
    const id = transaction(deps, () => {
      const product = productRow(deps, storeId, productId);
      const { n } = stmt(
        deps,
        'SELECT coalesce(max(position) + 1, 0) AS n FROM variants WHERE product_id = ?',
      ).get(productId) as { n: number };
      if (n >= 100)
        throw invalid([{ field: 'variants', message: 'a product has at most 100 variants' }]);
      insertVariant(deps, storeId, productId, product.price_cents, input, n, now);
      syncProductStock(deps, productId, now);
      return (
        stmt(deps, 'SELECT id FROM variants WHERE product_id = ? AND position = ?').get(
          productId,
          n,
        ) as { id: string }
      ).id;
    });
    const row = stmt(deps, `SELECT ${VARIANT_COLUMNS} FROM variants WHERE id = ?`).get(
      id,
    ) as VariantRow;
    res.status(201).json(toVariant(row));
  });

  router.get('/collections', products, function listCollections(req, res) {
    const storeId = storeOf(res);
    const page = parsePageQuery(req, COLLECTION_SORT_COLUMNS);
    const { rows, pagination } = listPage<CollectionRow & Record<string, unknown>>(
      deps,
      { table: 'collections', columns: COLLECTION_COLUMNS, scopeValue: storeId },
      page,
      COLLECTION_SORT_COLUMNS,
    );
    res.json({ data: rows.map(toCollection), pagination });
  });

  router.post('/collections', products, function postCollection(req, res) {
    res.status(201).json(createCollection(deps, storeOf(res), req.body));
  });

  router.get('/products/:id/inventory', inventory, function getInventory(req, res) {
    res.json(inventoryOf(deps, storeOf(res), idParam(req, 'Product')));
  });

  router.put('/products/:id/inventory', inventory, function putInventory(req, res) {
    res.json(adjustInventory(deps, storeOf(res), idParam(req, 'Product'), req.body));
  });

  return router;
}
