/**
 * Compile-time checks of the client's types (type-checked by types.test.ts
 * with tsc; never run). Each `@ts-expect-error` must be an error: tsc fails on
 * an unused one, so a loosened type (e.g. an index signature) fails the test.
 */
// The client's own modules, not the whole main entry, keep this tsc run short.
import type { StoreApiClient } from '../../src/client/index.js';
import type { Customer, FulfillmentStatus, Order, ProductStatus } from '../../src/client/types.js';

declare const client: StoreApiClient;
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assert = <T extends true>(_ok?: T) => undefined;

export async function inputsAreExact() {
  await client.customers.create({ email: 'a@example.com', firstName: 'Ada' });
  // @ts-expect-error misspelt key
  await client.customers.create({ email: 'a@example.com', fristName: 'Ada' });
  // @ts-expect-error email must be a string
  await client.customers.create({ email: 42 });
  // @ts-expect-error email is required on create
  await client.customers.create({ firstName: 'Ada' });
  await client.customers.update('id', { note: 'vip' });
  // @ts-expect-error unknown key on update
  await client.customers.update('id', { nickname: 'x' });

  await client.products.create({ name: 'Mug', status: 'active', weightUnit: 'g' });
  // @ts-expect-error not a product status
  await client.products.create({ name: 'Mug', status: 'published' });
  // @ts-expect-error misspelt key
  await client.products.update('id', { prise: 3 });
  const url = 'https://x.test/a.png';
  // @ts-expect-error unknown key in a nested image
  await client.products.create({ name: 'Mug', images: [{ url, caption: 'x' }] });
  // @ts-expect-error unknown key on a variant
  await client.products.variants.create('pid', { title: 'S', colour: 'red' });

  await client.collections.create({ name: 'Summer', productIds: [] });
  // @ts-expect-error unknown key
  await client.collections.create({ name: 'Summer', products: [] });
  await client.draftOrders.create({
    customerEmail: 'a@b.co',
    items: [{ productId: 'p', quantity: 1 }],
  });
  // @ts-expect-error items are required
  await client.draftOrders.create({ customerEmail: 'a@b.co' });
  // @ts-expect-error unknown key in a line item
  await client.draftOrders.create({ items: [{ productId: 'p', quantity: 1, qty: 1 }] });
  const items = [{ productId: 'p', quantity: 1 }];
  // @ts-expect-error not a payment method
  await client.draftOrders.create({ items, paymentMethod: 'cheque' });
  await client.orders.fulfill('o', { trackingNumber: 'T1', items: [{ itemId: 'i', quantity: 1 }] });
  // @ts-expect-error misspelt key
  await client.orders.fulfill('o', { trackingNumber: 'T1', trackingNumbr: 'T1' });
  // @ts-expect-error misspelt key
  await client.orders.refund('o', { amout: 1 });
  // @ts-expect-error not an order status
  await client.orders.update('o', { status: 'shipped' });

  await client.shipping.createLabel({ orderId: 'o', carrier: 'ups' });
  // @ts-expect-error misspelt key
  await client.shipping.createLabel({ orderId: 'o', carrier: 'ups', servce: 'ground' });
  await client.shipping.rates({
    shippingAddress: { line1: '1 Main St', city: 'Springfield', country: 'US' },
    items: [{ productId: 'p', quantity: 2 }],
  });
  // @ts-expect-error address without city
  await client.shipping.rates({ shippingAddress: { line1: 'x', country: 'US' }, items });
  await client.discounts.create({ code: 'SAVE10', type: 'percentage', value: 10 });
  // @ts-expect-error not a discount type
  await client.discounts.create({ code: 'SAVE10', type: 'percent' });
  // @ts-expect-error misspelt key
  await client.discounts.update('d', { activ: false });
  await client.content.pages.create({ title: 'About' });
  // @ts-expect-error posts have tags, pages do not
  await client.content.pages.create({ title: 'About', tags: [] });
  await client.content.blog.create({ title: 'News', tags: ['a'] });
  // @ts-expect-error misspelt key
  await client.content.blog.create({ title: 'News', auther: 'me' });
  // @ts-expect-error not a granularity
  await client.analytics.sales({ granularity: 'year' });
  // @ts-expect-error exactly one of set, increment, decrement
  await client.inventory.update('p', { set: 1, increment: 2 });
}

export async function sortIsPerResource() {
  await client.products.list({ sort: 'price', order: 'asc' });
  // @ts-expect-error products cannot sort by total
  await client.products.list({ sort: 'total' });
  await client.orders.list({ sort: 'total', status: 'open', fulfillment_status: 'partial' });
  // @ts-expect-error orders cannot sort by name
  await client.orders.list({ sort: 'name' });
  // @ts-expect-error not an order status filter
  await client.orders.list({ status: 'pending' });
  await client.customers.list({ sort: 'email' });
  // @ts-expect-error customers cannot sort by price
  await client.customers.list({ sort: 'price' });
  await client.discounts.list({ sort: 'code' });
  await client.collections.list({ sort: 'name' });
  await client.products.variants.list('p', { sort: 'position' });
  // @ts-expect-error shipping zones sort by created_at / updated_at only
  await client.shipping.zones({ sort: 'name' });
  for await (const o of client.orders.list.listAll({ sort: 'total' })) {
    assert<Equal<typeof o, Order>>();
  }
}

export async function outputsNameEveryField() {
  const customer = await client.customers.get('c');
  assert<Equal<typeof customer.firstName, string>>();
  assert<Equal<typeof customer.ordersCount, number>>();
  const c: Customer = customer;
  // @ts-expect-error not a customer field
  c.firstname;
  const order = await client.orders.get('o');
  assert<Equal<typeof order.status, 'open' | 'closed' | 'cancelled'>>();
  assert<Equal<typeof order.fulfillmentStatus, FulfillmentStatus>>();
  assert<Equal<(typeof order.refunds)[number]['amount'], number>>();
  const product = await client.products.get('p');
  assert<Equal<typeof product.status, ProductStatus>>();
  assert<Equal<typeof product.compareAtPrice, number | null>>();
  const label = await client.shipping.createLabel({ orderId: 'o', carrier: 'ups' });
  assert<Equal<typeof label.trackingNumber, string>>();
  const quote = await client.shipping.rates({
    shippingAddress: { line1: 'x', city: 'y', country: 'US' },
    items: [{ productId: 'p', quantity: 1 }],
  });
  assert<Equal<(typeof quote.data)[number]['estimatedDays'], number>>();
  const overview = await client.analytics.overview();
  assert<Equal<typeof overview.conversionRate, number>>();
  const sales = await client.analytics.sales({ granularity: 'week' });
  assert<Equal<typeof sales.granularity, 'day' | 'week' | 'month'>>();
  const top = await client.analytics.topProducts({ limit: 5 });
  assert<Equal<(typeof top.data)[number]['revenue'], number>>();
  const settings = await client.store.settings();
  assert<Equal<typeof settings.taxesIncluded, boolean>>();
  const discount = await client.discounts.create({ code: 'X', type: 'free_shipping' });
  assert<Equal<typeof discount.type, 'percentage' | 'fixed_amount' | 'free_shipping'>>();
  const fulfillment = await client.orders.fulfill('o', { trackingNumber: 'T' });
  assert<Equal<typeof fulfillment.fulfillmentStatus, FulfillmentStatus>>();
  const refund = await client.orders.refund('o', {});
  assert<Equal<typeof refund.financialStatus, 'paid' | 'partially_refunded' | 'refunded'>>();
  const draft = await client.draftOrders.create({ items: [{ productId: 'p', quantity: 1 }] });
  assert<Equal<typeof draft.total, number>>();
  const page = await client.content.pages.create({ title: 'x' });
  assert<Equal<typeof page.published, boolean>>();
  const post = await client.content.blog.create({ title: 'x' });
  assert<Equal<typeof post.publishedAt, string | null>>();
  const levels = await client.inventory.get('p');
  assert<Equal<(typeof levels.locations)[number]['available'], number>>();
}

export async function grantCheckNarrows(
  check: () => Promise<import('../../src/grant/index.js').GrantCheck>,
) {
  const result = await check();
  // @ts-expect-error scopes exist only once the status says the grant is active
  void result.scopes;
  if (result.status === 'active') {
    assert<Equal<typeof result.scopes, string[]>>();
    assert<Equal<typeof result.expiresAt, string>>();
  }
  if (result.status === 'store_mismatch') assert<Equal<typeof result.platformStoreId, string>>();
}
