/**
 * The platform API's resources as valibot schemas: the one source of truth for
 * the local platform's body validation, the client's input and output types,
 * the OpenAPI document and docs/platform-api-schemas.md. Loads only valibot,
 * so the client's light entry can import it.
 */
export * as analytics from './analytics.js';
export * as collections from './collections.js';
export * from './common.js';
export * as content from './content.js';
export * as customers from './customers.js';
export * as discounts from './discounts.js';
export { components, type Endpoint, endpoints } from './endpoints.js';
export * as fields from './fields.js';
export * as inventory from './inventory.js';
export * as orders from './orders.js';
export * as products from './products.js';
export * as shipping from './shipping.js';
export * as stores from './stores.js';
