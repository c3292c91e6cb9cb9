/**
 * Stores: creation (with default shipping setup and an optional seed), lookup,
 * and the two store-settings endpoints. All functions here are synchronous
 * (better-sqlite3 is).
 */
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { PLATFORM_INVALID_OPTIONS, PlatformError } from '../errors.js';
import { seedStore } from '../seed/index.js';
import { groupScope, type ResourceDeps, stmt, storeOf, transaction } from './http.js';
import { slugify } from './validate.js';

export interface CreateStoreInput {
  /** @default 'Dev Store' */
  name?: string;
  /** Three-letter currency code (case-insensitive). @default 'USD' */
  currency?: string;
  /** @default 'en' */
  language?: string;
  /** `true` seeds a default-size realistic store; a number seeds that many products. @default false */
  seed?: boolean | number;
}

export interface StoreRecord {
  id: string;
  name: string;
  domain: string;
  currency: string;
  language: string;
  email: string;
  timezone: string;
  country: string;
  createdAt: string;
  updatedAt: string;
}

/** Product count of `seed: true`. */
export const DEFAULT_SEED_PRODUCTS = 60;

interface StoreRow {
  id: string;
  name: string;
  domain: string;
  currency: string;
  language: string;
  email: string;
  timezone: string;
  country: string;
  created_at: string;
  updated_at: string;
}

const toStore = (r: StoreRow): StoreRecord => ({
  id: r.id,
  name: r.name,
  domain: r.domain,
  currency: r.currency,
  language: r.language,
  email: r.email,
  timezone: r.timezone,
  country: r.country,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const STORE_COLUMNS =
  'id, name, domain, currency, language, email, timezone, country, created_at, updated_at';

const DEFAULT_CARRIERS = [
  { name: 'UPS', code: 'ups', services: ['ground', 'express'] },
  { name: 'FedEx', code: 'fedex', services: ['ground', 'overnight'] },
  { name: 'USPS', code: 'usps', services: ['priority', 'first_class'] },
];

const DEFAULT_ZONES = [
  {
    name: 'Domestic',
    countries: ['US'],
    rates: [
      {
        name: 'Standard',
        price: 5.99,
        minSubtotal: null,
        maxSubtotal: 49.99,
        carrier: 'usps',
        service: 'priority',
        estimatedDays: 5,
      },
      {
        name: 'Free shipping',
        price: 0,
        minSubtotal: 50,
        maxSubtotal: null,
        carrier: 'usps',
        service: 'priority',
        estimatedDays: 5,
      },
      {
        name: 'Express',
        price: 19.99,
        minSubtotal: null,
        maxSubtotal: null,
        carrier: 'ups',
        service: 'express',
        estimatedDays: 2,
      },
    ],
  },
  {
    name: 'Europe',
    countries: ['DE', 'FR', 'GB', 'ES', 'IT', 'NL', 'SE', 'IE', 'PL', 'PT', 'AT', 'BE'],
    rates: [
      {
        name: 'International standard',
        price: 14.99,
        minSubtotal: null,
        maxSubtotal: null,
        carrier: 'ups',
        service: 'ground',
        estimatedDays: 10,
      },
    ],
  },
  {
    name: 'Rest of world',
    countries: ['*'],
    rates: [
      {
        name: 'International',
        price: 24.99,
        minSubtotal: null,
        maxSubtotal: null,
        carrier: 'fedex',
        service: 'ground',
        estimatedDays: 14,
      },
    ],
  },
];

const invalidStore = (setting: string, message: string) =>
  new PlatformError(PLATFORM_INVALID_OPTIONS, `createStore: ${setting} ${message}`);

/** Validates createStore's input once and applies the defaults documented on CreateStoreInput. */
function resolveStoreInput(input: CreateStoreInput) {
  const name = (input.name ?? 'Dev Store').trim();
  if (name.length === 0 || name.length > 255) {
    throw invalidStore('name', 'must be 1 to 255 characters.');
  }
  const currency = (input.currency ?? 'USD').toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) {
    throw invalidStore('currency', 'must be a three-letter currency code such as USD.');
  }
  const language = input.language ?? 'en';
  if (!/^[a-z]{2}(?:-[A-Z]{2})?$/.test(language)) {
    throw invalidStore('language', 'must be a language tag such as en or pt-BR.');
  }
  const rawSeed = input.seed ?? false;
  const seed = rawSeed === true ? DEFAULT_SEED_PRODUCTS : rawSeed === false ? 0 : rawSeed;
  if (!Number.isSafeInteger(seed) || seed < 0 || seed > 1_000_000) {
    throw invalidStore('seed', 'must be true, false or a number of products from 0 to 1,000,000.');
  }
  return { name, currency, language, seed };
}

/**
 * Creates a store with default shipping zones and carriers; seeds it when asked.
 * Throws PlatformError `PLATFORM_INVALID_OPTIONS` for invalid input.
 * Synchronous.
 */
export function createStore(
  deps: ResourceDeps,
  input: CreateStoreInput = {},
): { storeId: string; name: string } {
  const { name, currency, language, seed } = resolveStoreInput(input);
  const id = randomUUID();
  const now = deps.clock.now().toISOString();
  const domain = `${slugify(name)}-${id.slice(0, 8)}.store.local`;
  transaction(deps, () => {
    stmt(
      deps,
      `INSERT INTO stores (${STORE_COLUMNS}, next_order_number) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1001)`,
    ).run(id, name, domain, currency, language, `owner@${domain}`, 'UTC', 'US', now, now);
    const carrierSql =
      'INSERT INTO carriers (id, store_id, name, code, services, active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?)';
    // One millisecond apart, so lists in creation order keep the order below.
    const at = (i: number) => new Date(deps.clock.now().getTime() + i).toISOString();
    for (const [i, c] of DEFAULT_CARRIERS.entries()) {
      stmt(deps, carrierSql).run(
        randomUUID(),
        id,
        c.name,
        c.code,
        JSON.stringify(c.services),
        at(i),
        at(i),
      );
    }
    const zoneSql =
      'INSERT INTO shipping_zones (id, store_id, name, countries, rates, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
    for (const [i, z] of DEFAULT_ZONES.entries()) {
      const rates = z.rates.map((r) => ({ id: randomUUID(), ...r, currency }));
      stmt(deps, zoneSql).run(
        randomUUID(),
        id,
        z.name,
        JSON.stringify(z.countries),
        JSON.stringify(rates),
        at(i),
        at(i),
      );
    }
  });
  if (seed > 0) seedStore(deps, id, { products: seed });
  return { storeId: id, name };
}

/** Every store, oldest first. Synchronous. */
export function listStores(deps: ResourceDeps): StoreRecord[] {
  return (
    stmt(deps, `SELECT ${STORE_COLUMNS} FROM stores ORDER BY created_at, id`).all() as StoreRow[]
  ).map(toStore);
}

/** One store, or null. Synchronous. */
export function getStore(deps: ResourceDeps, storeId: string): StoreRecord | null {
  const row = stmt(deps, `SELECT ${STORE_COLUMNS} FROM stores WHERE id = ?`).get(storeId) as
    | StoreRow
    | undefined;
  return row ? toStore(row) : null;
}

export function storeRoutes(deps: ResourceDeps): Router {
  const router = Router();
  router.use('/stores', groupScope('store_settings', true));
  router.get('/stores/current', function currentStore(_req, res) {
    const store = getStore(deps, storeOf(res));
    if (!store)
      return res.status(404).json({ error: 'Store not found', code: 'NOT_FOUND', details: [] });
    res.json({
      id: store.id,
      name: store.name,
      domain: store.domain,
      currency: store.currency,
      language: store.language,
    });
  });
  router.get('/stores/settings', function storeSettings(_req, res) {
    const store = getStore(deps, storeOf(res));
    if (!store)
      return res.status(404).json({ error: 'Store not found', code: 'NOT_FOUND', details: [] });
    res.json({
      ...store,
      currencies: [store.currency],
      languages: [store.language],
      weightUnit: 'kg',
      taxesIncluded: false,
      taxRate: 0.08,
      orderNumberPrefix: '#',
    });
  });
  return router;
}
