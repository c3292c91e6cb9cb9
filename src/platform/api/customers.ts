/**
 * Customers: profiles with addresses (JSON on the row) and, on the detail
 * read, their order history from the orders table.
 */
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { type CUSTOMER_SORTS, customerCreate } from '../../schemas/customers.js';
import {
  conflict,
  fromCents,
  groupScope,
  idParam,
  isUniqueViolation,
  notFound,
  type ResourceDeps,
  stmt,
  storeOf,
} from './http.js';
import { BASE_SORTS, listPage, parsePageQuery, type SortFields } from './pagination.js';
import { validateBody } from './validate.js';

const CUSTOMER_SORT_COLUMNS: SortFields<(typeof CUSTOMER_SORTS)[number]> = {
  ...BASE_SORTS,
  email: { column: 'email', type: 'text' },
};
const COLUMNS =
  'id, email, first_name, last_name, phone, accepts_marketing, note, tags, addresses, created_at, updated_at';

interface CustomerRow {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  phone: string;
  accepts_marketing: number;
  note: string;
  tags: string;
  addresses: string;
  created_at: string;
  updated_at: string;
}

const toCustomer = (r: CustomerRow) => ({
  id: r.id,
  email: r.email,
  firstName: r.first_name,
  lastName: r.last_name,
  phone: r.phone,
  acceptsMarketing: r.accepts_marketing === 1,
  note: r.note,
  tags: JSON.parse(r.tags) as string[],
  addresses: JSON.parse(r.addresses) as Array<Record<string, unknown>>,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface CustomerInput {
  email?: string;
  firstName?: string;
  lastName?: string;
  phone?: string;
  acceptsMarketing?: boolean;
  note?: string;
  tags?: string[];
  addresses?: Array<Record<string, unknown>>;
}

/** Each address gets an id; exactly one is the default (the first unless one says so). */
function normalizeAddresses(addresses: Array<Record<string, unknown>>) {
  const defaultIndex = Math.max(
    0,
    addresses.findIndex((a) => a.default === true),
  );
  return addresses.map((a, i) => ({ id: randomUUID(), ...a, default: i === defaultIndex }));
}

function customerRow(deps: ResourceDeps, storeId: string, id: string): CustomerRow {
  const row = stmt(deps, `SELECT ${COLUMNS} FROM customers WHERE id = ? AND store_id = ?`).get(
    id,
    storeId,
  ) as CustomerRow | undefined;
  if (!row) throw notFound('Customer');
  return row;
}

function readCustomer(deps: ResourceDeps, storeId: string, id: string) {
  const customer = toCustomer(customerRow(deps, storeId, id));
  const orders = stmt(
    deps,
    `SELECT id, order_number, status, fulfillment_status, total_cents, currency, created_at FROM orders
     WHERE store_id = ? AND customer_id = ? ORDER BY created_at DESC, id DESC LIMIT 250`,
  ).all(storeId, id) as Array<{
    id: string;
    order_number: string;
    status: string;
    fulfillment_status: string;
    total_cents: number;
    currency: string;
    created_at: string;
  }>;
  const stats = stmt(
    deps,
    `SELECT count(*) AS n, coalesce(sum(total_cents - refunded_cents), 0) AS spent FROM orders
     WHERE store_id = ? AND customer_id = ? AND status != 'cancelled'`,
  ).get(storeId, id) as { n: number; spent: number };
  return {
    ...customer,
    ordersCount: stats.n,
    totalSpent: fromCents(stats.spent),
    orders: orders.map((o) => ({
      id: o.id,
      orderNumber: o.order_number,
      status: o.status,
      fulfillmentStatus: o.fulfillment_status,
      total: fromCents(o.total_cents),
      currency: o.currency,
      createdAt: o.created_at,
    })),
  };
}

const duplicateEmail = () => conflict('email', 'A customer with this e-mail already exists');

export function customerRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const customers = groupScope('customers');

  router.get('/customers', customers, function listCustomers(req, res) {
    const page = parsePageQuery(req, CUSTOMER_SORT_COLUMNS);
    const { rows, pagination } = listPage<CustomerRow & Record<string, unknown>>(
      deps,
      { table: 'customers', columns: COLUMNS, scopeValue: storeOf(res) },
      page,
      CUSTOMER_SORT_COLUMNS,
    );
    res.json({ data: rows.map(toCustomer), pagination });
  });

  router.get('/customers/:id', customers, function getCustomer(req, res) {
    res.json(readCustomer(deps, storeOf(res), idParam(req, 'Customer')));
  });

  router.post('/customers', customers, function postCustomer(req, res) {
    const storeId = storeOf(res);
    const input = validateBody<CustomerInput>(customerCreate, req.body);
    const id = randomUUID();
    const now = deps.clock.now().toISOString();
    try {
      stmt(
        deps,
        `INSERT INTO customers (${COLUMNS}, store_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        input.email!.toLowerCase(),
        input.firstName ?? '',
        input.lastName ?? '',
        input.phone ?? '',
        input.acceptsMarketing ? 1 : 0,
        input.note ?? '',
        JSON.stringify(input.tags ?? []),
        JSON.stringify(normalizeAddresses(input.addresses ?? [])),
        now,
        now,
        storeId,
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateEmail();
      throw err;
    }
    res.status(201).json(readCustomer(deps, storeId, id));
  });

  router.put('/customers/:id', customers, function putCustomer(req, res) {
    const storeId = storeOf(res);
    const id = idParam(req, 'Customer');
    const row = customerRow(deps, storeId, id);
    const input = validateBody<CustomerInput>(customerCreate, req.body, { partial: true });
    try {
      stmt(
        deps,
        `UPDATE customers SET email = ?, first_name = ?, last_name = ?, phone = ?, accepts_marketing = ?, note = ?, tags = ?, addresses = ?, updated_at = ?
         WHERE id = ?`,
      ).run(
        input.email?.toLowerCase() ?? row.email,
        input.firstName ?? row.first_name,
        input.lastName ?? row.last_name,
        input.phone ?? row.phone,
        input.acceptsMarketing === undefined
          ? row.accepts_marketing
          : input.acceptsMarketing
            ? 1
            : 0,
        input.note ?? row.note,
        input.tags ? JSON.stringify(input.tags) : row.tags,
        input.addresses ? JSON.stringify(normalizeAddresses(input.addresses)) : row.addresses,
        deps.clock.now().toISOString(),
        id,
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateEmail();
      throw err;
    }
    res.json(readCustomer(deps, storeId, id));
  });

  return router;
}
