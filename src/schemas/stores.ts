/** The calling store and its settings. */
import * as v from 'valibot';
import { timestamp } from './fields.js';
import { WEIGHT_UNITS } from './products.js';

export const storeInfo = v.object({
  id: v.string(),
  name: v.string(),
  domain: v.string(),
  currency: v.string(),
  language: v.string(),
});

export const storeSettings = v.object({
  ...storeInfo.entries,
  email: v.string(),
  timezone: v.string(),
  country: v.string(),
  currencies: v.array(v.string()),
  languages: v.array(v.string()),
  weightUnit: v.picklist(WEIGHT_UNITS),
  taxesIncluded: v.boolean(),
  taxRate: v.number(),
  orderNumberPrefix: v.string(),
  createdAt: timestamp(),
  updatedAt: timestamp(),
});

/** The session check (`GET {auth_url}/oauth/session`): what the bearer token grants. */
export const sessionInfo = v.object({
  store_id: v.string(),
  app_id: v.string(),
  scopes: v.array(v.string()),
  /** ISO 8601, in the platform's clock. */
  expires_at: timestamp(),
});
