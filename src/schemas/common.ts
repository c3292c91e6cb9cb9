/**
 * What every resource shares: list parameters (with each resource's sortable
 * fields), the list envelope and the API error body.
 */
import * as v from 'valibot';
import { int } from './fields.js';

/** Sort fields every list accepts. */
export const BASE_SORTS = ['created_at', 'updated_at'] as const;

/**
 * Query parameters of a list: `limit` 1–250 (default 25), the opaque `cursor`
 * of the previous page, `sort` one of the resource's sortable fields, `order`.
 */
export function listQuery<const S extends readonly [string, ...string[]]>(sorts: S) {
  return v.object({
    /** Records per page, 1 to 250. @default 25 */
    limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(250))),
    /** `pagination.nextCursor` of the previous page. */
    cursor: v.optional(v.string()),
    /** A sortable field of this resource. @default 'created_at' */
    sort: v.optional(v.picklist(sorts)),
    order: v.optional(v.picklist(['asc', 'desc'])),
  });
}

export const pagination = v.object({
  hasMore: v.boolean(),
  /** Opaque cursor of the next page; null on the last page. */
  nextCursor: v.nullable(v.string()),
  total: int(),
});

/** A list response: one page of records and where the next starts. */
export function pageOf<T extends v.GenericSchema>(record: T) {
  return v.object({ data: v.array(record), pagination });
}

/** The document's API error body (`details` lists every invalid field of a 422). */
export const apiError = v.object({
  error: v.string(),
  code: v.string(),
  details: v.array(v.object({ field: v.string(), message: v.string() })),
  /** On 403 `insufficient_scope`: the scope the endpoint needs. */
  requiredScope: v.optional(v.string()),
});
