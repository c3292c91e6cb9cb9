/**
 * The one store-id rule. A store id goes into URLs, cookies, JWT subjects, log
 * records, the `X-Store-Id` header and SQL parameters, so it is held to the
 * characters that are inert in all of them: 1 to 64 of `A-Z a-z 0-9 _ -` (the
 * platform's UUIDs among them). Every place that takes a store id from a request,
 * a token or the app's code checks it with `isStoreId`.
 */
const STORE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** True for a well-formed store id. */
export function isStoreId(v: unknown): v is string {
  return typeof v === 'string' && STORE_ID.test(v);
}

/** What the kit says about a store id that is not one. */
export const STORE_ID_RULE = 'a store id is 1 to 64 characters of A-Z, a-z, 0-9, _ and -';
