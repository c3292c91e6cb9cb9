/**
 * Shipping: zones with rates and carriers (set up when a store is created),
 * labels for an order, and rates for a cart computed from the zones.
 */
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { labelInput, ratesInput } from '../../schemas/shipping.js';
import {
  ApiError,
  type ErrorDetail,
  fromCents,
  groupScope,
  invalid,
  type ResourceDeps,
  stmt,
  storeOf,
  toCents,
} from './http.js';
import { BASE_SORTS, listPage, parsePageQuery } from './pagination.js';
import { validateBody } from './validate.js';

interface ZoneRate {
  id: string;
  name: string;
  price: number;
  minSubtotal: number | null;
  maxSubtotal: number | null;
  carrier: string;
  service: string;
  estimatedDays: number;
  currency: string;
}

interface ZoneRow {
  id: string;
  name: string;
  countries: string;
  rates: string;
  created_at: string;
  updated_at: string;
}
const toZone = (r: ZoneRow) => ({
  id: r.id,
  name: r.name,
  countries: JSON.parse(r.countries) as string[],
  rates: JSON.parse(r.rates) as ZoneRate[],
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

interface CarrierRow {
  id: string;
  name: string;
  code: string;
  services: string;
  active: number;
  created_at: string;
  updated_at: string;
}
const toCarrier = (r: CarrierRow) => ({
  id: r.id,
  name: r.name,
  code: r.code,
  services: JSON.parse(r.services) as string[],
  active: r.active === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export function shippingRoutes(deps: ResourceDeps): Router {
  const router = Router();
  const shipping = groupScope('shipping');

  router.get('/shipping/zones', shipping, function listZones(req, res) {
    const page = parsePageQuery(req, BASE_SORTS, { order: 'asc' });
    const { rows, pagination } = listPage<ZoneRow & Record<string, unknown>>(
      deps,
      {
        table: 'shipping_zones',
        columns: 'id, name, countries, rates, created_at, updated_at',
        scopeValue: storeOf(res),
      },
      page,
      BASE_SORTS,
    );
    res.json({ data: rows.map(toZone), pagination });
  });

  router.get('/shipping/carriers', shipping, function listCarriers(req, res) {
    const page = parsePageQuery(req, BASE_SORTS, { order: 'asc' });
    const { rows, pagination } = listPage<CarrierRow & Record<string, unknown>>(
      deps,
      {
        table: 'carriers',
        columns: 'id, name, code, services, active, created_at, updated_at',
        scopeValue: storeOf(res),
      },
      page,
      BASE_SORTS,
    );
    res.json({ data: rows.map(toCarrier), pagination });
  });

  router.post('/shipping/labels', shipping, function postLabel(req, res) {
    const storeId = storeOf(res);
    const input = validateBody<{
      orderId: string;
      carrier: string;
      service?: string;
      weight?: number;
    }>(labelInput, req.body);
    const details: ErrorDetail[] = [];
    const order = stmt(
      deps,
      'SELECT id, status, items, currency FROM orders WHERE id = ? AND store_id = ?',
    ).get(input.orderId.toLowerCase(), storeId) as
      | { id: string; status: string; items: string; currency: string }
      | undefined;
    if (!order) details.push({ field: 'orderId', message: 'is not an order of this store' });
    const carrier = stmt(
      deps,
      'SELECT code, services, active FROM carriers WHERE store_id = ? AND code = ?',
    ).get(storeId, input.carrier.toLowerCase()) as
      | { code: string; services: string; active: number }
      | undefined;
    let service = input.service;
    if (carrier?.active !== 1) {
      details.push({ field: 'carrier', message: 'is not a configured carrier code' });
    } else {
      const services = JSON.parse(carrier.services) as string[];
      if (service === undefined) service = services[0];
      else if (!services.includes(service)) {
        details.push({ field: 'service', message: `must be one of ${services.join(', ')}` });
      }
    }
    if (details.length > 0 || !order || !carrier) throw invalid(details);
    if (order.status === 'cancelled') {
      throw new ApiError(409, 'INVALID_TRANSITION', 'No label can be bought for a cancelled order');
    }
    const items = JSON.parse(order.items) as Array<{ quantity: number }>;
    const units = items.reduce((s, it) => s + it.quantity, 0);
    const costCents =
      450 + 125 * units + (service === 'express' || service === 'overnight' ? 1200 : 0);
    const id = randomUUID();
    const trackingNumber = `${carrier.code.toUpperCase()}${id.replace(/-/g, '').slice(0, 18).toUpperCase()}`;
    const now = deps.clock.now().toISOString();
    const labelUrl = `https://labels.store.local/${id}.pdf`;
    stmt(
      deps,
      `INSERT INTO shipping_labels (id, store_id, order_id, carrier, service, tracking_number, label_url, cost_cents, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      id,
      storeId,
      order.id,
      carrier.code,
      service ?? '',
      trackingNumber,
      labelUrl,
      costCents,
      now,
      now,
    );
    res.status(201).json({
      id,
      orderId: order.id,
      carrier: carrier.code,
      service: service ?? '',
      trackingNumber,
      trackingUrl: `https://track.store.local/${carrier.code}/${trackingNumber}`,
      labelUrl,
      cost: fromCents(costCents),
      currency: order.currency,
      createdAt: now,
    });
  });

  router.post('/shipping/rates', shipping, function postRates(req, res) {
    const storeId = storeOf(res);
    const input = validateBody<{
      shippingAddress: { country: string };
      items: Array<{ productId: string; variantId?: string; quantity: number }>;
    }>(ratesInput, req.body);
    const details: ErrorDetail[] = [];
    let subtotalCents = 0;
    let weightKg = 0;
    input.items.forEach((line, i) => {
      const product = stmt(
        deps,
        'SELECT id, price_cents, weight_milli, weight_unit FROM products WHERE id = ? AND store_id = ?',
      ).get(line.productId.toLowerCase(), storeId) as
        | { id: string; price_cents: number; weight_milli: number; weight_unit: string }
        | undefined;
      if (!product) {
        details.push({ field: `items[${i}].productId`, message: 'is not a product of this store' });
        return;
      }
      let price = product.price_cents;
      if (line.variantId) {
        const v = stmt(
          deps,
          'SELECT price_cents FROM variants WHERE id = ? AND product_id = ?',
        ).get(line.variantId.toLowerCase(), product.id) as { price_cents: number } | undefined;
        if (!v) {
          details.push({
            field: `items[${i}].variantId`,
            message: 'is not a variant of this product',
          });
          return;
        }
        price = v.price_cents;
      }
      subtotalCents += price * line.quantity;
      const perKg = { g: 0.001, kg: 1, lb: 0.453592, oz: 0.0283495 }[product.weight_unit] ?? 1;
      weightKg += (product.weight_milli / 1000) * perKg * line.quantity;
    });
    if (details.length > 0) throw invalid(details);
    const zones = (
      stmt(
        deps,
        'SELECT id, name, countries, rates, created_at, updated_at FROM shipping_zones WHERE store_id = ? ORDER BY created_at, id',
      ).all(storeId) as ZoneRow[]
    ).map(toZone);
    const country = input.shippingAddress.country;
    // A zone naming the country wins over the catch-all "*" zone.
    const zone =
      zones.find((z) => z.countries.includes(country)) ??
      zones.find((z) => z.countries.includes('*'));
    const subtotal = fromCents(subtotalCents);
    const rates = (zone?.rates ?? [])
      .filter(
        (r) =>
          (r.minSubtotal === null || subtotal >= r.minSubtotal) &&
          (r.maxSubtotal === null || subtotal <= r.maxSubtotal),
      )
      .map((r) => ({
        id: r.id,
        zoneId: zone!.id,
        zoneName: zone!.name,
        name: r.name,
        carrier: r.carrier,
        service: r.service,
        // Heavier carts pay 0.50 per kilogram above 2 kg on paid rates.
        price:
          r.price === 0
            ? 0
            : fromCents(toCents(r.price) + Math.max(0, Math.ceil(weightKg - 2)) * 50),
        currency: r.currency,
        estimatedDays: r.estimatedDays,
      }));
    res.json({ data: rates, subtotal, weightKg: Math.round(weightKg * 1000) / 1000 });
  });

  return router;
}
