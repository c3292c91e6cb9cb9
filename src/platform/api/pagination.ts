/**
 * Cursor pagination as the document specifies (`limit` 25 by default, 250 at
 * most; opaque `cursor`; `sort`; `order`), implemented as keyset pagination on
 * (sort value, id) so records inserted between pages never shift a page: the
 * next page starts strictly after the last row seen.
 */
import type { Request } from 'express';
import type { BASE_SORTS as BASE_SORT_NAMES } from '../../schemas/common.js';
import { badRequest, cachedCount, isUuid, type ResourceDeps, stmt } from './http.js';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 250;

/** API sort name → SQL column and its value type. */
export type SortFields<K extends string = string> = Record<
  K,
  { column: string; type: 'text' | 'int' }
>;

/** Keyed by the schemas' sort names, so the two cannot drift apart. */
export const BASE_SORTS: SortFields<(typeof BASE_SORT_NAMES)[number]> = {
  created_at: { column: 'created_at', type: 'text' },
  updated_at: { column: 'updated_at', type: 'text' },
};

export interface PageQuery {
  limit: number;
  sort: string;
  order: 'asc' | 'desc';
  after: { value: string | number; id: string } | null;
}

export interface Pagination {
  hasMore: boolean;
  nextCursor: string | null;
  total: number;
}

function single(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw badRequest(name, 'must be given once, as a plain value');
  return v;
}

/** Reads limit/cursor/sort/order; any bad value is a 400 BAD_REQUEST naming the parameter. */
export function parsePageQuery(
  req: Request,
  sorts: SortFields,
  defaults: { sort?: string; order?: 'asc' | 'desc' } = {},
): PageQuery {
  const rawLimit = single(req, 'limit');
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== undefined) {
    if (!/^\d{1,4}$/.test(rawLimit)) throw badRequest('limit', 'must be an integer from 1 to 250');
    limit = Number(rawLimit);
    if (limit < 1 || limit > MAX_LIMIT) {
      throw badRequest('limit', 'must be an integer from 1 to 250');
    }
  }
  const sort = single(req, 'sort') ?? defaults.sort ?? 'created_at';
  if (!Object.hasOwn(sorts, sort)) {
    throw badRequest('sort', `must be one of ${Object.keys(sorts).join(', ')}`);
  }
  const order = single(req, 'order') ?? defaults.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw badRequest('order', 'must be asc or desc');
  const cursor = single(req, 'cursor');
  let after: PageQuery['after'] = null;
  if (cursor !== undefined) after = decodeCursor(cursor, sort, order, sorts[sort]!.type);
  return { limit, sort, order, after };
}

// The cursor carries the sort and order it was made for, so reusing it with
// another sort cannot silently skip records.
function encodeCursor(sort: string, order: string, value: string | number, id: string): string {
  return Buffer.from(JSON.stringify([sort, order, value, id])).toString('base64url');
}

function decodeCursor(
  cursor: string,
  sort: string,
  order: string,
  type: 'text' | 'int',
): { value: string | number; id: string } {
  const fail = () => badRequest('cursor', 'is not a cursor returned by this list');
  if (cursor.length > 2048 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw fail();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw fail();
  const [s, o, value, id] = parsed as unknown[];
  if (s !== sort || o !== order || !isUuid(id)) throw fail();
  if (type === 'text' ? typeof value !== 'string' : !Number.isSafeInteger(value)) throw fail();
  return { value: value as string | number, id };
}

export interface ListSpec {
  table: string;
  /** SELECT list (must include `id` and every sort column). */
  columns: string;
  /** Extra WHERE conditions beyond the store (e.g. filters), with their parameters. */
  where?: string[];
  params?: unknown[];
  /** Column that scopes the list; `store_id` unless the list is a child list. */
  scopeColumn?: string;
  scopeValue: string;
}

/** Runs one page query and a count; returns raw rows and the pagination block. */
export function listPage<Row extends Record<string, unknown>>(
  deps: ResourceDeps,
  spec: ListSpec,
  page: PageQuery,
  sorts: SortFields,
): { rows: Row[]; pagination: Pagination } {
  const sortField = sorts[page.sort]!;
  const col = sortField.column;
  const conditions = [`${spec.scopeColumn ?? 'store_id'} = ?`, ...(spec.where ?? [])];
  const params: unknown[] = [spec.scopeValue, ...(spec.params ?? [])];
  const filterSql = conditions.join(' AND ');
  const total = cachedCount(
    deps,
    `SELECT count(*) AS n FROM ${spec.table} WHERE ${filterSql}`,
    params,
  );
  const cmp = page.order === 'desc' ? '<' : '>';
  const pageConditions = page.after ? `${filterSql} AND (${col}, id) ${cmp} (?, ?)` : filterSql;
  const pageParams = page.after ? [...params, page.after.value, page.after.id] : params;
  const dir = page.order === 'desc' ? 'DESC' : 'ASC';
  const rows = stmt(
    deps,
    `SELECT ${spec.columns} FROM ${spec.table} WHERE ${pageConditions} ORDER BY ${col} ${dir}, id ${dir} LIMIT ?`,
  ).all(...pageParams, page.limit + 1) as Row[];
  const hasMore = rows.length > page.limit;
  if (hasMore) rows.length = page.limit;
  const last = rows[rows.length - 1];
  const nextCursor =
    hasMore && last
      ? encodeCursor(page.sort, page.order, last[col] as string | number, last.id as string)
      : null;
  return { rows, pagination: { hasMore, nextCursor, total } };
}
