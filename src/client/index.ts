/**
 * The typed REST client of the platform API, one per store. Built by the kit
 * (`kit.client(storeId)`, `res.locals.store.client`); every method goes through
 * the transport (pacing, retries, refresh, typed errors).
 */
import { ResponseInvalidError, StoreApiError } from './errors.js';

/** Code of the error thrown for an empty or dot-segment resource id (nothing is sent). */
export const INVALID_ID = 'INVALID_ID' as const;

import { type HttpMethod, isRecord, type RequestOptions, type Transport } from './transport.js';
import type {
  AnalyticsOverview,
  AnalyticsRange,
  AnalyticsSales,
  AnalyticsSalesParams,
  AnalyticsTopProducts,
  AnalyticsTopProductsParams,
  BlogPost,
  BlogPostCreate,
  Carrier,
  Collection,
  CollectionCreate,
  CollectionSort,
  ContentPage,
  ContentPageCreate,
  Customer,
  CustomerCreate,
  CustomerDetail,
  CustomerListParams,
  CustomerUpdate,
  Discount,
  DiscountCreate,
  DiscountSort,
  DiscountUpdate,
  DraftOrder,
  DraftOrderInput,
  Fulfillment,
  FulfillmentInput,
  InventoryAdjustment,
  InventoryLevels,
  ListParams,
  Order,
  OrderDetail,
  OrderListParams,
  OrderUpdate,
  Page,
  Product,
  ProductCreate,
  ProductInput,
  ProductSort,
  Refund,
  RefundInput,
  SessionInfo,
  ShippingLabel,
  ShippingLabelInput,
  ShippingRateQuote,
  ShippingRatesInput,
  ShippingZone,
  StoreInfo,
  StoreSettings,
  Variant,
  VariantInput,
  VariantSort,
} from './types.js';

/** Per-call options every method accepts last. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** A list method: takes list params, returns one page. */
export type ListFn<T, P extends ListParams<string> = ListParams> = (
  params?: P,
  options?: CallOptions,
) => Promise<Page<T>>;

/** A list method plus `listAll`, which iterates every record across pages. */
export type Listable<T, P extends ListParams<string> = ListParams> = ListFn<T, P> & {
  listAll(params?: Omit<P, 'cursor'>, options?: CallOptions): AsyncIterable<T>;
};

export interface StoreApiClient {
  readonly storeId: string;
  /** Any endpoint under `{base_url}`: returns the parsed JSON body (undefined for 204). */
  request<T = unknown>(method: HttpMethod, path: string, options?: RequestOptions): Promise<T>;
  /**
   * Every record of a list method, page after page, following `nextCursor`.
   * Only one page is held at a time.
   * @example for await (const p of client.paginate(client.products.list, { limit: 250 })) …
   */
  paginate<T, P extends ListParams<string>>(
    list: ListFn<T, P>,
    params?: Omit<P, 'cursor'>,
    options?: CallOptions,
  ): AsyncIterable<T>;
  products: {
    list: Listable<Product, ListParams<ProductSort>>;
    get(id: string, options?: CallOptions): Promise<Product>;
    create(input: ProductCreate, options?: CallOptions): Promise<Product>;
    update(id: string, input: ProductInput, options?: CallOptions): Promise<Product>;
    delete(id: string, options?: CallOptions): Promise<void>;
    variants: {
      list(
        productId: string,
        params?: ListParams<VariantSort>,
        options?: CallOptions,
      ): Promise<Page<Variant>>;
      create(productId: string, input: VariantInput, options?: CallOptions): Promise<Variant>;
    };
  };
  collections: {
    list: Listable<Collection, ListParams<CollectionSort>>;
    create(input: CollectionCreate, options?: CallOptions): Promise<Collection>;
  };
  orders: {
    list: Listable<Order, OrderListParams>;
    get(id: string, options?: CallOptions): Promise<OrderDetail>;
    update(id: string, input: OrderUpdate, options?: CallOptions): Promise<OrderDetail>;
    fulfill(id: string, input: FulfillmentInput, options?: CallOptions): Promise<Fulfillment>;
    refund(id: string, input: RefundInput, options?: CallOptions): Promise<Refund>;
  };
  draftOrders: {
    create(input: DraftOrderInput, options?: CallOptions): Promise<DraftOrder>;
  };
  customers: {
    list: Listable<Customer, CustomerListParams>;
    get(id: string, options?: CallOptions): Promise<CustomerDetail>;
    create(input: CustomerCreate, options?: CallOptions): Promise<CustomerDetail>;
    update(id: string, input: CustomerUpdate, options?: CallOptions): Promise<CustomerDetail>;
  };
  inventory: {
    get(productId: string, options?: CallOptions): Promise<InventoryLevels>;
    /** Set the stock to `quantity`. */
    set(
      productId: string,
      quantity: number,
      extra?: { variantId?: string },
      options?: CallOptions,
    ): Promise<InventoryLevels>;
    /** Increment (positive `delta`) or decrement (negative) the stock. */
    adjust(
      productId: string,
      delta: number,
      extra?: { variantId?: string; allowNegative?: boolean },
      options?: CallOptions,
    ): Promise<InventoryLevels>;
    /** The raw adjustment body: `{set}`, `{increment}` or `{decrement}`. */
    update(
      productId: string,
      adjustment: InventoryAdjustment,
      options?: CallOptions,
    ): Promise<InventoryLevels>;
  };
  shipping: {
    zones: Listable<ShippingZone>;
    carriers: Listable<Carrier>;
    createLabel(input: ShippingLabelInput, options?: CallOptions): Promise<ShippingLabel>;
    /** Rates for a cart: `{ data: ShippingRate[], subtotal, weightKg }`. */
    rates(input: ShippingRatesInput, options?: CallOptions): Promise<ShippingRateQuote>;
  };
  discounts: {
    list: Listable<Discount, ListParams<DiscountSort>>;
    create(input: DiscountCreate, options?: CallOptions): Promise<Discount>;
    update(id: string, input: DiscountUpdate, options?: CallOptions): Promise<Discount>;
    delete(id: string, options?: CallOptions): Promise<void>;
  };
  content: {
    pages: {
      list: Listable<ContentPage>;
      create(input: ContentPageCreate, options?: CallOptions): Promise<ContentPage>;
    };
    blog: {
      list: Listable<BlogPost>;
      create(input: BlogPostCreate, options?: CallOptions): Promise<BlogPost>;
    };
  };
  analytics: {
    overview(params?: AnalyticsRange, options?: CallOptions): Promise<AnalyticsOverview>;
    sales(params?: AnalyticsSalesParams, options?: CallOptions): Promise<AnalyticsSales>;
    topProducts(
      params?: AnalyticsTopProductsParams,
      options?: CallOptions,
    ): Promise<AnalyticsTopProducts>;
  };
  store: {
    current(options?: CallOptions): Promise<StoreInfo>;
    settings(options?: CallOptions): Promise<StoreSettings>;
  };
  /**
   * The session check (`GET {auth_url}/oauth/session`): the store, app, scopes and
   * expiry the current access token grants, in the platform's words. Same pacing,
   * retries, refresh and errors as every call (a revoked grant throws `token_revoked`).
   */
  session(options?: CallOptions): Promise<SessionInfo>;
}

function seg(id: string): string {
  // "." and ".." survive encodeURIComponent and the URL parser would resolve them, so an id
  // taken from user input could point the call at another endpoint.
  if (typeof id !== 'string' || id.length === 0 || id === '.' || id === '..') {
    throw new StoreApiError(
      INVALID_ID,
      'Resource ids must be non-empty strings other than "." and "..".',
    );
  }
  return encodeURIComponent(id);
}

export function createStoreClient(transport: Transport): StoreApiClient {
  const storeId = transport.storeId;

  async function raw(
    method: HttpMethod,
    path: string | URL,
    opts: RequestOptions,
  ): Promise<unknown> {
    return transport.call(method, path, opts);
  }

  /**
   * A single record. The platform answers records bare (only lists have an
   * envelope); a body that is exactly `{ data: {...} }` is unwrapped too. A 2xx
   * that is not a JSON object is a broken response, never an empty record.
   */
  async function one<T>(
    method: HttpMethod,
    target: string | URL,
    opts: RequestOptions,
  ): Promise<T> {
    const body = await raw(method, target, opts);
    const path = typeof target === 'string' ? target : target.pathname;
    if (!isRecord(body)) {
      throw new ResponseInvalidError(`${method} ${path} answered without a JSON object.`, {
        method,
        path,
      });
    }
    const keys = Object.keys(body);
    if (keys.length === 1 && keys[0] === 'data') {
      if (!isRecord(body.data)) {
        throw new ResponseInvalidError(`${method} ${path} answered with an empty "data".`, {
          method,
          path,
        });
      }
      return body.data as T;
    }
    return body as T;
  }

  async function page<T>(path: string, opts: RequestOptions): Promise<Page<T>> {
    const body = await raw('GET', path, opts);
    if (!isRecord(body) || !Array.isArray(body.data)) {
      throw new ResponseInvalidError(`GET ${path} answered without a "data" array.`, {
        method: 'GET',
        path,
      });
    }
    const p = isRecord(body.pagination) ? body.pagination : {};
    const nextCursor = typeof p.nextCursor === 'string' && p.nextCursor ? p.nextCursor : null;
    return {
      ...body,
      data: body.data as T[],
      pagination: {
        ...p,
        hasMore: p.hasMore === true && nextCursor !== null,
        nextCursor,
        total: typeof p.total === 'number' ? p.total : body.data.length,
      },
    } as Page<T>;
  }

  async function none(method: HttpMethod, path: string, opts: RequestOptions): Promise<void> {
    await raw(method, path, opts);
  }

  async function* paginate<T, P extends ListParams<string>>(
    list: ListFn<T, P>,
    params?: Omit<P, 'cursor'>,
    options?: CallOptions,
  ): AsyncGenerator<T, void, undefined> {
    let cursor: string | undefined;
    const seen = new Set<string>();
    for (;;) {
      const p = await list({ ...(params ?? {}), ...(cursor ? { cursor } : {}) } as P, options);
      for (const record of p.data) yield record;
      if (!p.pagination.hasMore || !p.pagination.nextCursor) return;
      if (seen.has(p.pagination.nextCursor)) {
        throw new ResponseInvalidError('The platform returned the same cursor twice; stopping.', {
          method: 'GET',
        });
      }
      // Only cursors are kept (strings), never the pages, so memory stays flat.
      seen.add(p.pagination.nextCursor);
      cursor = p.pagination.nextCursor;
    }
  }

  function listable<T, P extends ListParams<string>>(path: string): Listable<T, P> {
    const list = async function list(params?: P, options?: CallOptions): Promise<Page<T>> {
      return page<T>(path, { ...options, query: params as RequestOptions['query'] });
    };
    return Object.assign(list, {
      listAll(params?: Omit<P, 'cursor'>, options?: CallOptions): AsyncIterable<T> {
        return paginate<T, P>(list, params, options);
      },
    });
  }

  const q = (p: object | undefined) => p as RequestOptions['query'];

  return {
    storeId,
    request<T>(method: HttpMethod, path: string, options: RequestOptions = {}) {
      return raw(method, path, options) as Promise<T>;
    },
    paginate,
    products: {
      list: listable<Product, ListParams<ProductSort>>('/products'),
      get: async (id, o) => one('GET', `/products/${seg(id)}`, { ...o }),
      create: async (input, o) => one('POST', '/products', { ...o, body: input }),
      update: async (id, input, o) => one('PUT', `/products/${seg(id)}`, { ...o, body: input }),
      delete: async (id, o) => none('DELETE', `/products/${seg(id)}`, { ...o }),
      variants: {
        list: async (productId, params, o) =>
          page(`/products/${seg(productId)}/variants`, { ...o, query: q(params) }),
        create: async (productId, input, o) =>
          one('POST', `/products/${seg(productId)}/variants`, { ...o, body: input }),
      },
    },
    collections: {
      list: listable<Collection, ListParams<CollectionSort>>('/collections'),
      create: (input, o) => one('POST', '/collections', { ...o, body: input }),
    },
    orders: {
      list: listable<Order, OrderListParams>('/orders'),
      get: async (id, o) => one('GET', `/orders/${seg(id)}`, { ...o }),
      update: async (id, input, o) => one('PUT', `/orders/${seg(id)}`, { ...o, body: input }),
      fulfill: async (id, input, o) =>
        one('POST', `/orders/${seg(id)}/fulfill`, { ...o, body: input }),
      refund: async (id, input, o) =>
        one('POST', `/orders/${seg(id)}/refund`, { ...o, body: input }),
    },
    draftOrders: {
      create: (input, o) => one('POST', '/draft-orders', { ...o, body: input }),
    },
    customers: {
      list: listable<Customer, CustomerListParams>('/customers'),
      get: async (id, o) => one('GET', `/customers/${seg(id)}`, { ...o }),
      create: async (input, o) => one('POST', '/customers', { ...o, body: input }),
      update: async (id, input, o) => one('PUT', `/customers/${seg(id)}`, { ...o, body: input }),
    },
    inventory: {
      get: async (productId, o) => one('GET', `/products/${seg(productId)}/inventory`, { ...o }),
      set: async (productId, quantity, extra, o) =>
        one('PUT', `/products/${seg(productId)}/inventory`, {
          ...o,
          body: { ...extra, set: quantity },
        }),
      adjust: async (productId, delta, extra, o) =>
        one('PUT', `/products/${seg(productId)}/inventory`, {
          ...o,
          body: delta >= 0 ? { ...extra, increment: delta } : { ...extra, decrement: -delta },
        }),
      update: async (productId, adjustment, o) =>
        one('PUT', `/products/${seg(productId)}/inventory`, { ...o, body: adjustment }),
    },
    shipping: {
      zones: listable<ShippingZone, ListParams>('/shipping/zones'),
      carriers: listable<Carrier, ListParams>('/shipping/carriers'),
      createLabel: (input, o) => one('POST', '/shipping/labels', { ...o, body: input }),
      rates: (input, o) => one('POST', '/shipping/rates', { ...o, body: input }),
    },
    discounts: {
      list: listable<Discount, ListParams<DiscountSort>>('/discounts'),
      create: async (input, o) => one('POST', '/discounts', { ...o, body: input }),
      update: async (id, input, o) => one('PUT', `/discounts/${seg(id)}`, { ...o, body: input }),
      delete: async (id, o) => none('DELETE', `/discounts/${seg(id)}`, { ...o }),
    },
    content: {
      pages: {
        list: listable<ContentPage, ListParams>('/content/pages'),
        create: (input, o) => one('POST', '/content/pages', { ...o, body: input }),
      },
      blog: {
        list: listable<BlogPost, ListParams>('/content/blog'),
        create: (input, o) => one('POST', '/content/blog', { ...o, body: input }),
      },
    },
    analytics: {
      overview: (params, o) => one('GET', '/analytics/overview', { ...o, query: q(params) }),
      sales: (params, o) => one('GET', '/analytics/sales', { ...o, query: q(params) }),
      topProducts: (params, o) => one('GET', '/analytics/top-products', { ...o, query: q(params) }),
    },
    store: {
      current: (o) => one('GET', '/stores/current', { ...o }),
      settings: (o) => one('GET', '/stores/settings', { ...o }),
    },
    session: async (o) => {
      const url = transport.sessionCheckUrl;
      if (!url) {
        throw new StoreApiError(
          'CLIENT_NOT_CONFIGURED',
          'The client has no session check URL; pass platformUrl to storeApp() or baseUrl to the client.',
        );
      }
      return one('GET', url, { ...o });
    },
  };
}
